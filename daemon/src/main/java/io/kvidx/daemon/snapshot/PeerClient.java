package io.kvidx.daemon.snapshot;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Fetches a running daemon's snapshot over HTTP ({@code GET <peer>/dump?format=kvidx}, the daemon's HTTP API) with
 * the JDK's {@link HttpClient}: the connection and the whole exchange are bounded by one timeout, the body by the
 * snapshot size limit (a larger declared length is refused before its body is read, a longer body as soon as it
 * passes the limit).
 *
 * <p><b>Note:</b> stateless; {@link #fetch} blocks its caller (the daemon's start) until done or timed out.
 */
public final class PeerClient {
    /** Path and query of a snapshot on a peer. */
    public static final String DUMP_PATH = "/dump?format=kvidx";
    /** Longest part of an error body quoted in a message. */
    private static final int ERROR_BODY_MAX = 512;

    private PeerClient() {
    }

    /**
     * @param peer the peer's base URL ({@code http://host:port}, or {@code host:port} for plain HTTP).
     * @return the URL of its snapshot.
     * @throws IllegalArgumentException when it is not an http(s) URL with a host.
     */
    public static URI dumpUri(final String peer) {
        String base = peer.strip();
        if (!base.contains("://")) {
            base = "http://" + base;
        }
        while (base.endsWith("/")) {
            base = base.substring(0, base.length() - 1);
        }
        final URI uri;
        try {
            uri = new URI(base + DUMP_PATH);
        } catch (final URISyntaxException ex) {
            throw new IllegalArgumentException("not a URL: " + peer, ex);
        }
        if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null
            || uri.getRawQuery() == null || !uri.getRawQuery().equals("format=kvidx")) {
            throw new IllegalArgumentException("must be http://HOST:PORT (or https://): " + peer);
        }
        return uri;
    }

    /**
     * Fetches a snapshot.
     *
     * @param peer      the peer's base URL.
     * @param timeoutMs bound on connecting and on the whole exchange.
     * @param maxBytes  longest body accepted.
     * @return the body (not verified yet).
     * @throws SnapshotFormatException when the body exceeds {@code maxBytes}.
     * @throws SnapshotException       when the peer cannot be reached, answers another status than 200, or does not
     *                                 finish within the timeout.
     */
    public static byte[] fetch(final String peer, final long timeoutMs, final long maxBytes) throws SnapshotException {
        return fetch(peer, timeoutMs, maxBytes, null);
    }

    /**
     * Fetches a snapshot from a peer whose API may require a bearer token.
     *
     * @param peer          the peer's base URL.
     * @param timeoutMs     bound on connecting and on the whole exchange.
     * @param maxBytes      longest body accepted.
     * @param authorization the {@code Authorization} header to send ({@code Bearer <token>}), or null for none.
     * @return the body (not verified yet).
     * @throws SnapshotFormatException when the body exceeds {@code maxBytes}.
     * @throws SnapshotException       when the peer cannot be reached, answers another status than 200, or does not
     *                                 finish within the timeout.
     */
    public static byte[] fetch(final String peer, final long timeoutMs, final long maxBytes,
        final String authorization) throws SnapshotException {
        final URI uri = dumpUri(peer);
        final HttpRequest.Builder b = HttpRequest.newBuilder(uri).GET().timeout(Duration.ofMillis(timeoutMs))
            .header("Accept", "application/octet-stream");
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        final HttpRequest request = b.build();
        try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofMillis(timeoutMs)).followRedirects(HttpClient.Redirect.NEVER).build()) {
            final CompletableFuture<HttpResponse<byte[]>> exchange = client.sendAsync(request, info ->
                new CappedBody(info.statusCode() == 200 ? maxBytes : ERROR_BODY_MAX, info.statusCode() == 200,
                    info.headers().firstValueAsLong("content-length").orElse(-1)));
            final HttpResponse<byte[]> response;
            try {
                response = exchange.get(timeoutMs, TimeUnit.MILLISECONDS);
            } catch (final TimeoutException ex) {
                exchange.cancel(true);
                client.shutdownNow();
                throw new SnapshotException("no snapshot from " + uri + " within " + timeoutMs + " ms");
            } catch (final InterruptedException ex) {
                exchange.cancel(true);
                client.shutdownNow();
                Thread.currentThread().interrupt();
                throw new SnapshotException("interrupted while fetching " + uri, ex);
            } catch (final ExecutionException ex) {
                for (Throwable t = ex.getCause(); t != null && t.getCause() != t; t = t.getCause()) {
                    if (t instanceof SnapshotFormatException format) {
                        throw new SnapshotFormatException(uri + ": " + format.getMessage());
                    }
                    if (t instanceof java.net.http.HttpTimeoutException) {
                        // The request's own timeout (the same bound) fired before the wait for it did.
                        throw new SnapshotException("no snapshot from " + uri + " within " + timeoutMs + " ms", ex);
                    }
                }
                throw new SnapshotException("cannot fetch " + uri + ": " + describe(ex.getCause()), ex);
            }
            if (response.statusCode() != 200) {
                throw new SnapshotException(uri + " answered HTTP " + response.statusCode() + ": "
                    + new String(response.body(), StandardCharsets.UTF_8).strip());
            }
            return response.body();
        }
    }

    private static String describe(final Throwable cause) {
        if (cause == null) {
            return "unknown failure";
        }
        final String message = cause.getMessage();
        return cause.getClass().getSimpleName() + (message == null ? "" : " (" + message + ")");
    }

    /**
     * Collects a body up to a limit: failing past it ({@code strict}, a snapshot), or keeping its first bytes and
     * dropping the rest (an error body, quoted in the message).
     */
    private static final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {
        private final CompletableFuture<byte[]> body = new CompletableFuture<>();
        private final long max;
        private final boolean strict;
        private final long declared;
        private final List<ByteBuffer> parts = new ArrayList<>();
        private long size;
        private Flow.Subscription subscription;

        CappedBody(final long max, final boolean strict, final long declared) {
            this.max = max;
            this.strict = strict;
            this.declared = declared;
        }

        @Override
        public void onSubscribe(final Flow.Subscription s) {
            subscription = s;
            if (strict && declared > max) {
                s.cancel();
                body.completeExceptionally(new SnapshotFormatException("snapshot of " + declared + " bytes "
                    + "(Content-Length) exceeds the limit of " + max + " bytes (snapshotMaxBytes)"));
                return;
            }
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(final List<ByteBuffer> items) {
            if (body.isDone()) {
                return;
            }
            for (final ByteBuffer b : items) {
                final long room = max - size;
                if (b.remaining() > room) {
                    if (strict) {
                        parts.clear();
                        subscription.cancel();
                        body.completeExceptionally(new SnapshotFormatException("snapshot body exceeds the limit "
                            + "of " + max + " bytes (snapshotMaxBytes)"));
                        return;
                    }
                    if (room > 0) {
                        parts.add(b.slice(b.position(), (int) room));
                        size = max;
                    }
                    continue;
                }
                size += b.remaining();
                parts.add(b);
            }
        }

        @Override
        public void onError(final Throwable failure) {
            parts.clear();
            body.completeExceptionally(failure);
        }

        @Override
        public void onComplete() {
            final byte[] bytes = new byte[(int) size];
            int at = 0;
            for (final ByteBuffer b : parts) {
                final int n = b.remaining();
                b.get(bytes, at, n);
                at += n;
            }
            parts.clear();
            body.complete(bytes);
        }

        @Override
        public CompletionStage<byte[]> getBody() {
            return body;
        }
    }
}
