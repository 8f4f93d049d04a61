/**
 * Carrying a routing plan out: the {@link io.kvidx.routing.exec.Executor} interface and the reference HTTP
 * executor (single dispatch and prefill-then-decode, with retry on another pod).
 */
package io.kvidx.routing.exec;
