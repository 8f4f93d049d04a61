package io.kvidx.bench.router;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;

/**
 * The baseline proxy of {@code bench router}'s overhead part: what a competent engineer writes first with the JDK
 * alone. {@link HttpServer} on virtual threads takes the request; {@link HttpClient} (HTTP/1.1, its own connection
 * pool) forwards it to the one upstream, streaming the body both ways (the request's input stream as the upstream
 * body, the upstream's input stream copied to the answer). No routing decision.
 *
 * <p>{@code java -cp kvidx-bench.jar io.kvidx.bench.router.JdkProxy PORT UPSTREAM_URL} (port 0: a free one);
 * prints {@code jdk proxy listening on 127.0.0.1:PORT}.
 */
public final class JdkProxy {
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection",
        "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length", "expect");

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final String upstream;

    private JdkProxy(final String upstream) {
        this.upstream = upstream.endsWith("/") ? upstream.substring(0, upstream.length() - 1) : upstream;
    }

    /**
     * @param args port, upstream base URL.
     * @throws IOException when the port cannot be bound.
     */
    public static void main(final String[] args) throws IOException {
        final JdkProxy proxy = new JdkProxy(args[1]);
        final HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(),
            Integer.parseInt(args[0])), 4096);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", proxy::forward);
        server.start();
        System.out.println("jdk proxy listening on 127.0.0.1:" + server.getAddress().getPort());
        System.out.flush();
    }

    private void forward(final HttpExchange exchange) {
        try (exchange) {
            final String length = exchange.getRequestHeaders().getFirst("Content-Length");
            final HttpRequest.BodyPublisher stream = HttpRequest.BodyPublishers.ofInputStream(
                exchange::getRequestBody);
            final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(upstream
                + exchange.getRequestURI())).method(exchange.getRequestMethod(), length == null ? stream
                : HttpRequest.BodyPublishers.fromPublisher(stream, Long.parseLong(length)));
            for (final Map.Entry<String, List<String>> h : exchange.getRequestHeaders().entrySet()) {
                if (!HOP_BY_HOP.contains(h.getKey().toLowerCase(Locale.ROOT))) {
                    for (final String v : h.getValue()) {
                        request.header(h.getKey(), v);
                    }
                }
            }
            final HttpResponse<InputStream> response = client.send(request.build(),
                HttpResponse.BodyHandlers.ofInputStream());
            response.headers().map().forEach((name, values) -> {
                if (!name.startsWith(":") && !HOP_BY_HOP.contains(name.toLowerCase(Locale.ROOT))) {
                    exchange.getResponseHeaders().put(name, values);
                }
            });
            final long bodyLength = response.headers().firstValueAsLong("content-length").orElse(-1);
            // HttpServer: 0 means chunked, -1 means no body.
            exchange.sendResponseHeaders(response.statusCode(), bodyLength == 0 ? -1 : Math.max(0, bodyLength));
            try (InputStream in = response.body(); OutputStream out = exchange.getResponseBody()) {
                in.transferTo(out);
            }
        } catch (final IOException | RuntimeException ex) {
            try {
                exchange.sendResponseHeaders(502, -1);
            } catch (final IOException | RuntimeException ignored) {
                // the answer had started: the connection closes with the exchange
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
