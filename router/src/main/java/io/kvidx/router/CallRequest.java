package io.kvidx.router;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpHeaders;

/**
 * What a {@link ProxyCall} is given of the client's request.
 *
 * @param headers       the client's headers (heap objects: they outlive the request's content).
 * @param path          the endpoint's path ({@code /v1/completions}, {@code /v1/chat/completions}).
 * @param body          the body, forwarded unchanged (the call owns this reference).
 * @param keepAlive     whether the client keeps its connection.
 * @param arrivedNs     when the request arrived ({@link System#nanoTime()}).
 * @param promptTokens  the prompt's tokens (0 when unknown).
 * @param endpointLabel the endpoint's metrics label ({@code completions}, {@code chat}).
 */
record CallRequest(HttpHeaders headers, String path, ByteBuf body, boolean keepAlive, long arrivedNs,
    int promptTokens, String endpointLabel) {
}
