/**
 * {@code kvidx epp}: the Gateway API Inference Extension's endpoint picker (Envoy ext_proc v3 over gRPC) on the
 * router's decision layer (docs/epp.md, ADR 0020).
 */
package io.kvidx.epp;
