package io.kvidx.serve;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The serving layer's guards over real loopback TCP and raw clients: the connection bound (one more is closed at
 * accept, and counted), the request read deadline (a client trickling a byte at a time is cut off although it never
 * idles; the time an answer takes does not count), and bearer tokens (401 in the API's shape without the right token,
 * in request order when pipelined; the health path open; weak tokens and unreadable files refused at start).
 */
@Timeout(60)
class ServeGuardsTest {
    private static final String TOKEN = "s3cret-token-0123456789";

    @TempDir
    Path dir;

    /** Answers {@code /slow} 600 ms later from another thread, anything else at once, with its path. */
    @ChannelHandler.Sharable
    private static final class App extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
            final FullHttpRequest r = (FullHttpRequest) msg;
            final String uri = r.uri();
            final boolean keepAlive = HttpUtil.isKeepAlive(r);
            ReferenceCountUtil.release(msg);
            if ("/slow".equals(uri)) {
                CompletableFuture.delayedExecutor(600, TimeUnit.MILLISECONDS).execute(() ->
                    Responses.json(ctx, keepAlive, 200, g -> g.writeString(uri)));
            } else {
                Responses.json(ctx, keepAlive, 200, g -> g.writeString(uri));
            }
        }
    }

    private static ServeContext context() {
        return new ServeContext().listen(new InetSocketAddress("127.0.0.1", 0)).threads(1).threadName("guards-test");
    }

    @Test
    void shouldCloseAConnectionBeyondTheBoundAtAccept() throws Exception {
        final ServeContext context = context().maxConnections(2);
        final HttpPipeline pipeline = HttpPipeline.of(context, App::new);
        try (NettyServer server = NettyServer.start(context, pipeline);
             Socket a = new Socket(InetAddress.getLoopbackAddress(), server.port());
             Socket b = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
            assertEquals("\"/a\"", body(ask(a, "/a")));
            assertEquals("\"/b\"", body(ask(b, "/b")));
            try (Socket c = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
                c.setSoTimeout(5_000);
                assertEquals(-1, c.getInputStream().read(), "the third connection is closed at once");
            }
            assertEquals(1, pipeline.connectionsRefused());
            assertEquals(2, pipeline.connectionsOpen());
            a.close();
            await(() -> pipeline.connectionsOpen() == 1);
            try (Socket d = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
                assertEquals("\"/d\"", body(ask(d, "/d")), "room again once one closed");
            }
        }
    }

    @Test
    void shouldCutOffAClientThatTricklesARequest() throws Exception {
        final ServeContext context = context().requestReadMs(700);
        final HttpPipeline pipeline = HttpPipeline.of(context, App::new);
        try (NettyServer server = NettyServer.start(context, pipeline);
             Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
            // A whole request, then one whose answer takes 600 ms, then another on the same connection: the time
            // being answered does not count against the next request.
            assertEquals("\"/a\"", body(ask(s, "/a")));
            assertEquals("\"/slow\"", body(ask(s, "/slow")));
            Thread.sleep(900); // idle between requests does not count either
            assertEquals("\"/b\"", body(ask(s, "/b")));
            assertEquals(0, pipeline.readDeadlinesExpired());

            // One byte every 100 ms: never idle, never whole.
            final OutputStream out = s.getOutputStream();
            final byte[] request = "GET /trickle HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n"
                .getBytes(StandardCharsets.US_ASCII);
            final long start = System.nanoTime();
            boolean closed = false;
            for (int i = 0; i < request.length - 2 && !closed; i++) {
                try {
                    out.write(request[i]);
                    out.flush();
                } catch (final java.io.IOException ex) {
                    closed = true;
                    break;
                }
                Thread.sleep(100);
                s.setSoTimeout(1);
                try {
                    closed = s.getInputStream().read() == -1;
                } catch (final SocketTimeoutException ex) {
                    // still open
                } catch (final java.io.IOException ex) {
                    closed = true;
                }
            }
            final long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(closed, "the trickling client was cut off");
            // Not before the deadline; the upper bound only says it was the deadline, not the idle timeout (60 s).
            assertTrue(ms >= 600 && ms < 30_000, "after the 700 ms deadline: " + ms + " ms");
            assertEquals(1, pipeline.readDeadlinesExpired());
        }
    }

    @Test
    void shouldRefuseRequestsWithoutTheBearerTokenInOrder() throws Exception {
        final Path file = dir.resolve("token");
        Files.writeString(file, TOKEN + "\n");
        final BearerAuth auth = BearerAuth.fromFile(file, Set.of("/health"), ErrorShape.FLAT);
        final ServeContext context = context().auth(auth);
        final HttpPipeline pipeline = HttpPipeline.of(context, App::new);
        try (NettyServer server = NettyServer.start(context, pipeline);
             Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
            s.setSoTimeout(10_000);
            final OutputStream out = s.getOutputStream();
            out.write(("GET /query HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-token-0123456789\r\n\r\n"
                + "GET /query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN + "\r\n\r\n"
                + "GET /health?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /dump HTTP/1.1\r\nHost: x\r\nAuthorization: bearer " + TOKEN + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            final String all = readAll(s.getInputStream());
            final String[] answers = all.split("(?=HTTP/1.1 )");
            assertEquals(5, answers.length, all);
            assertTrue(answers[0].startsWith("HTTP/1.1 401"), answers[0]);
            assertTrue(answers[0].endsWith("{\"error\":\"this server needs 'Authorization: Bearer <token>'\","
                + "\"code\":\"unauthorized\"}"), answers[0]);
            assertTrue(answers[1].startsWith("HTTP/1.1 401"), "a wrong token: " + answers[1]);
            assertTrue(answers[2].startsWith("HTTP/1.1 200") && answers[2].endsWith("\"/query\""), answers[2]);
            assertTrue(answers[3].startsWith("HTTP/1.1 200") && answers[3].endsWith("\"/health?x=1\""),
                "the open path: " + answers[3]);
            assertTrue(answers[4].startsWith("HTTP/1.1 401"), "the scheme is matched exactly: " + answers[4]);
            assertEquals(3, pipeline.unauthorized());
        }
        assertThrows(IllegalArgumentException.class, () -> new BearerAuth("short", Set.of(), ErrorShape.FLAT));
        assertThrows(IllegalArgumentException.class, () -> new BearerAuth("has a space in it, long enough",
            Set.of(), ErrorShape.FLAT));
        final IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
            () -> BearerAuth.fromFile(dir.resolve("none"), Set.of(), ErrorShape.FLAT));
        assertTrue(missing.getMessage().contains("none"), missing.getMessage());
    }

    private static String ask(final Socket s, final String path) throws Exception {
        s.setSoTimeout(10_000);
        final OutputStream out = s.getOutputStream();
        out.write(("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        final InputStream in = s.getInputStream();
        final ByteArrayOutputStream b = new ByteArrayOutputStream();
        int contentLength = -1;
        int headerEnd = -1;
        while (headerEnd < 0 || b.size() < headerEnd + contentLength) {
            final int c = in.read();
            if (c < 0) {
                throw new AssertionError("closed after " + b);
            }
            b.write(c);
            final String text = b.toString(StandardCharsets.US_ASCII);
            if (headerEnd < 0 && text.endsWith("\r\n\r\n")) {
                headerEnd = text.length();
                final String lower = text.toLowerCase(java.util.Locale.ROOT);
                final int at = lower.indexOf("content-length:");
                contentLength = Integer.parseInt(lower.substring(at + 15, lower.indexOf("\r\n", at)).strip());
            }
        }
        return b.toString(StandardCharsets.US_ASCII);
    }

    private static String body(final String answer) {
        return answer.substring(answer.indexOf("\r\n\r\n") + 4);
    }

    private static String readAll(final InputStream in) throws Exception {
        final ByteArrayOutputStream b = new ByteArrayOutputStream();
        final byte[] buf = new byte[4096];
        int n;
        while ((n = in.read(buf)) >= 0) {
            b.write(buf, 0, n);
        }
        return b.toString(StandardCharsets.US_ASCII);
    }

    private static void await(final java.util.function.BooleanSupplier condition) throws InterruptedException {
        final long deadline = System.currentTimeMillis() + 5_000;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out");
            }
            Thread.sleep(20);
        }
    }
}
