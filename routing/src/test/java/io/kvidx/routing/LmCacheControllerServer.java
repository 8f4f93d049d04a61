package io.kvidx.routing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvidx.routing.lmcache.LmCacheLookupClient;
import io.kvidx.client.json.MiniJson;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real, in-process implementation of the LMCache controller's {@code POST /lookup} on loopback (ephemeral port),
 * behaving as LMCache's {@code KVController.lookup}: the posted tokens are cut into chunks ({@code chunk_size}
 * tokens, the last one partial), each chunk is keyed by the whole prefix up to its end (what LMCache's chained prefix
 * hash identifies), the walk stops at the first chunk no instance holds, and each matched chunk is credited to the
 * instance that admitted it first: {@code layout_info[instance] = [location, chunk_end]}. What each instance holds is
 * told with {@link #admit}, chunked the same way. Request validation follows FastAPI's: a body that is not
 * {@code {"tokens": [int, ...]}} gets 422.
 *
 * <p>Test knobs: a delay before answering, a forced status, a forced body.
 */
final class LmCacheControllerServer implements AutoCloseable {
    static final String LOCATION = "LocalCPUBackend";

    private final int chunkSize;
    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        final Thread t = new Thread(r, "lmcache-controller-test");
        t.setDaemon(true);
        return t;
    });
    /** Chunk key (the prefix up to the chunk's end) -> instances holding it, in admission order. */
    private final Map<List<Integer>, List<String>> pool = new HashMap<>();
    final AtomicInteger lookups = new AtomicInteger();
    final List<List<Long>> posted = new ArrayList<>();
    volatile long delayMs;
    volatile int forcedStatus;
    volatile String forcedBody;

    LmCacheControllerServer(final int chunkSize) throws IOException {
        this.chunkSize = chunkSize;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(executor);
        server.createContext(LmCacheLookupClient.LOOKUP_PATH, this::handle);
        server.start();
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /**
     * An instance stores the KV of these tokens (every chunk of them, as LMCache's worker admits them).
     */
    synchronized void admit(final String instance, final int[] tokens) {
        for (int end : chunkEnds(tokens.length)) {
            final List<String> holders = pool.computeIfAbsent(prefix(tokens, end), k -> new ArrayList<>());
            if (!holders.contains(instance)) {
                holders.add(instance);
            }
        }
    }

    private int[] chunkEnds(final int length) {
        final int n = (length + chunkSize - 1) / chunkSize;
        final int[] ends = new int[n];
        for (int c = 0; c < n; c++) {
            ends[c] = Math.min((c + 1) * chunkSize, length);
        }
        return ends;
    }

    private static List<Integer> prefix(final int[] tokens, final int end) {
        return Arrays.stream(tokens, 0, end).boxed().toList();
    }

    /**
     * The lookup itself.
     */
    synchronized Map<String, Object> lookup(final int[] tokens) {
        final Map<String, Object> layout = new LinkedHashMap<>();
        for (int end : chunkEnds(tokens.length)) {
            final List<String> holders = pool.get(prefix(tokens, end));
            if (holders == null) {
                break;
            }
            layout.put(holders.get(0), List.of(LOCATION, (long) end));
        }
        return layout;
    }

    private void handle(final HttpExchange ex) throws IOException {
        try (ex) {
            if (!"POST".equals(ex.getRequestMethod())) {
                send(ex, 405, "{\"detail\":\"Method Not Allowed\"}");
                return;
            }
            final int[] tokens;
            try {
                final Object doc = MiniJson.parse(new String(ex.getRequestBody().readAllBytes(),
                    StandardCharsets.UTF_8));
                if (!(doc instanceof Map<?, ?> m) || !(m.get("tokens") instanceof List<?> l)) {
                    send(ex, 422, "{\"detail\":[{\"type\":\"missing\",\"loc\":[\"body\",\"tokens\"]}]}");
                    return;
                }
                tokens = new int[l.size()];
                final List<Long> copy = new ArrayList<>();
                for (int i = 0; i < tokens.length; i++) {
                    if (!(l.get(i) instanceof Long v) || v != v.intValue()) {
                        send(ex, 422, "{\"detail\":[{\"type\":\"int_type\",\"loc\":[\"body\",\"tokens\"," + i + "]}]}");
                        return;
                    }
                    tokens[i] = v.intValue();
                    copy.add(v);
                }
                synchronized (posted) {
                    posted.add(copy);
                }
            } catch (final IllegalArgumentException bad) {
                send(ex, 422, "{\"detail\":\"JSON decode error\"}");
                return;
            }
            lookups.incrementAndGet();
            if (delayMs > 0) {
                try {
                    Thread.sleep(delayMs);
                } catch (final InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            if (forcedStatus != 0) {
                send(ex, forcedStatus, "{\"detail\":\"forced failure\"}");
            } else if (forcedBody != null) {
                send(ex, 200, forcedBody);
            } else {
                final Map<String, Object> answer = new LinkedHashMap<>();
                answer.put("event_id", "Lookup" + UUID.randomUUID());
                answer.put("layout_info", lookup(tokens));
                send(ex, 200, MiniJson.write(answer));
            }
        } catch (final IOException gone) {
            // the client gave up (timeout): nothing to answer
        }
    }

    private static void send(final HttpExchange ex, final int status, final String body) throws IOException {
        final byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close() throws InterruptedException {
        server.stop(0);
        executor.shutdownNow();
        executor.awaitTermination(5, TimeUnit.SECONDS);
    }
}
