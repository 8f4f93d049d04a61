/**
 * LMCache controller integration (key counts per pod from {@code GET /controller/workers}) and a small JSON
 * reader/writer for control-plane documents.
 */
package io.kvidx.routing.lmcache;
