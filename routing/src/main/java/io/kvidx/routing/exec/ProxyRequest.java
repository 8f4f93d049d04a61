package io.kvidx.routing.exec;

import java.util.Map;
import java.util.Objects;

/**
 * An OpenAI-style HTTP request to forward to the picked pod(s).
 *
 * @param path    request path, e.g. {@code /v1/completions} or {@code /v1/chat/completions}.
 * @param body    JSON body.
 * @param headers extra headers to forward (e.g. authorization); not Content-Length or Host.
 */
public record ProxyRequest(String path, byte[] body, Map<String, String> headers) {
    /**
     * Validates.
     */
    public ProxyRequest {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(body, "body");
        headers = headers == null ? Map.of() : Map.copyOf(headers);
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("path must start with '/': " + path);
        }
    }
}
