package io.kvidx.serve;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A server on this layer over real loopback TCP: pipelined requests are answered in request order although the first
 * answer completes later on another thread; an oversized body is answered 413 after the answers before it, in the
 * API's error shape, and the connection closed.
 */
@Timeout(30)
class HttpServerTest {
    /** Answers /slow from another thread 200 ms later, anything else at once; 413 for a refused body. */
    @ChannelHandler.Sharable
    private static final class App extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
            if (msg instanceof BodyLimit.TooLarge t) {
                Responses.error(ctx, false, ErrorShape.FLAT, new HttpError(413, "body_too_large",
                    "over " + t.maxBodyBytes()));
                return;
            }
            final FullHttpRequest r = (FullHttpRequest) msg;
            final String uri = r.uri();
            final boolean keepAlive = HttpUtil.isKeepAlive(r);
            ReferenceCountUtil.release(msg);
            if ("/slow".equals(uri)) {
                CompletableFuture.delayedExecutor(200, TimeUnit.MILLISECONDS).execute(() ->
                    Responses.json(ctx, keepAlive, 200, g -> g.writeString(uri)));
            } else {
                Responses.json(ctx, keepAlive, 200, g -> g.writeString(uri));
            }
        }
    }

    @Test
    void shouldAnswerPipelinedRequestsInOrder() throws Exception {
        final ServeContext context = new ServeContext().listen(new InetSocketAddress("127.0.0.1", 0)).threads(1)
            .maxBodyBytes(64).threadName("serve-test");
        final App app = new App();
        try (NettyServer server = NettyServer.start(context, HttpPipeline.of(context, () -> app));
             Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
            s.setSoTimeout(10_000);
            final OutputStream out = s.getOutputStream();
            out.write(("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + "x".repeat(100))
                .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            final String answers = readUntilClosed(s.getInputStream());
            final int slow = answers.indexOf("\"/slow\"");
            final int fast = answers.indexOf("\"/fast\"");
            final int big = answers.indexOf("413");
            assertTrue(slow > 0 && fast > slow && big > fast, answers);
            assertTrue(answers.endsWith("{\"error\":\"over 64\",\"code\":\"body_too_large\"}"), answers);
            assertEquals(3, answers.split("HTTP/1.1 ").length - 1, answers);
        }
    }

    private static String readUntilClosed(final InputStream in) throws Exception {
        final StringBuilder b = new StringBuilder();
        final byte[] buf = new byte[4096];
        int n;
        while ((n = in.read(buf)) >= 0) {
            b.append(new String(buf, 0, n, StandardCharsets.US_ASCII));
        }
        return b.toString();
    }
}
