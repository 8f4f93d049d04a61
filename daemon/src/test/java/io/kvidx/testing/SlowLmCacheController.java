package io.kvidx.testing;

import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A slow LMCache controller on loopback for the tests of scorers that may wait: every {@code POST /lookup} is answered
 * after a fixed delay with {@code pod-b} holding 64 tokens in CPU memory, and counted. The router's and the picker's
 * tests use it to show their event loops do not wait for it.
 */
public final class SlowLmCacheController implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService executor = Executors.newFixedThreadPool(8);
    private final AtomicInteger lookups = new AtomicInteger();

    /**
     * @param delayMs how long each lookup takes.
     * @throws IOException when no loopback port can be bound.
     */
    public SlowLmCacheController(final long delayMs) throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        server.setExecutor(executor);
        server.createContext("/lookup", exchange -> {
            lookups.incrementAndGet();
            exchange.getRequestBody().readAllBytes();
            try {
                Thread.sleep(delayMs);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
            final byte[] body = "{\"layout_info\": {\"pod-b\": [\"LocalCPUBackend\", 64]}}"
                .getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }

    /**
     * @return the controller's base URL ({@code http://127.0.0.1:PORT}).
     */
    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /**
     * @return lookups received so far (answered or not yet).
     */
    public int lookups() {
        return lookups.get();
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
