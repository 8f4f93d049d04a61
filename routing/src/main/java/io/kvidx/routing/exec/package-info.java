/**
 * Carrying a routing plan out: the one proxy policy ({@link io.kvidx.routing.exec.ProxyPolicy}, per request a
 * {@link io.kvidx.routing.exec.ProxyExchange}: stages, retries on another pod before the first byte, prefill then
 * decode, targets with the data-parallel rank header, the cache hint, the headers passed on), which every transport
 * drives: {@code kvidx router}'s Netty call, and {@link io.kvidx.routing.exec.HttpExecutor}, the blocking
 * {@link io.kvidx.routing.exec.Executor} on {@code java.net.http}.
 */
package io.kvidx.routing.exec;
