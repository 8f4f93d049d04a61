package io.kvidx.router;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Heap allocated by the router per proxied request, read deterministically: requests go one at a time over one
 * keep-alive connection through a {@link RouterServer} in this JVM to an in-process upstream that answers each with
 * a small fixed completion, and the router's threads' allocated bytes
 * ({@link com.sun.management.ThreadMXBean#getThreadAllocatedBytes(long[])}: its event loops and tokenizing threads,
 * not its housekeeping thread, whose work follows the clock) are read before and after a batch. Token-id bodies of
 * 1,000 and 4,000 tokens: what the proxy path allocates must not grow with the request (issue 36, item 4).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RouterAllocationTest {
    /** Requests before the measured ones (the JIT compiles the path, pools fill, connections open). */
    static final int WARM_UP = 3_000;
    /** Measured requests per size and round. */
    static final int MEASURED = 2_000;
    /** Rounds; each size's figure is its least (a round the JIT had not finished compiling for counts less). */
    static final int ROUNDS = 3;
    /**
     * Most bytes a proxied token-id request may allocate on the router's threads: 4,938 B measured on 2026-11-28
     * (Netty's HTTP codecs, jackson's parser over the body's fields, the call's own objects); 6,185 B before the
     * client's headers and the pod's answer head were passed on instead of copied, the call's two timers made one
     * (issue 36, item 4).
     */
    static final long MAX_BYTES_PER_REQUEST = 5_600;
    /** Most a 4,000-token request may allocate beyond a 1,000-token one: nothing on the path grows with it. */
    static final long MAX_GROWTH_BYTES = 256;
    private static final String ANSWER = "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"model\":\"m\","
        + "\"choices\":[{\"index\":0,\"text\":\"ok\",\"finish_reason\":\"length\"}],"
        + "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}";

    @Test
    void shouldNotAllocateMoreForALongerPrompt() throws Exception {
        final Measured m = measure();
        System.out.printf(Locale.ROOT, "router allocation per proxied request: %,d B at 1,000 tokens, %,d B at 4,000"
            + " tokens (least of %d rounds of %,d requests each, after %,d warm-up; router threads %s)%n", m.small,
            m.large, ROUNDS, MEASURED, WARM_UP, m.threads);
        assertTrue(m.small > 0, "the router's threads were not found");
        assertTrue(m.large - m.small <= MAX_GROWTH_BYTES, "a 4,000-token request allocates " + (m.large - m.small)
            + " B more than a 1,000-token one");
        assertTrue(Math.max(m.small, m.large) <= MAX_BYTES_PER_REQUEST, "a proxied request allocates "
            + Math.max(m.small, m.large) + " B on the router's threads (bound " + MAX_BYTES_PER_REQUEST + ")");
    }

    /** What a run measured. */
    record Measured(long small, long large, List<String> threads) {
    }

    static Measured measure() throws Exception {
        final Path work = Routers.workDir("router-alloc");
        final EventLoopGroup upstreamLoop = new MultiThreadIoEventLoopGroup(1,
            new DefaultThreadFactory("alloc-upstream", true), NioIoHandler.newFactory());
        final ByteBuf answer = Unpooled.unreleasableBuffer(Unpooled.directBuffer()
            .writeBytes(ANSWER.getBytes(StandardCharsets.US_ASCII)));
        try {
            final Channel upstream = new ServerBootstrap().group(upstreamLoop).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(final SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec()).addLast(new Answer(answer));
                    }
                }).bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).sync().channel();
            final int upstreamPort = ((InetSocketAddress) upstream.localAddress()).getPort();
            final RouterConfig c = Routers.config(work);
            c.responseHeaders = false;
            c.pod("up", "http://127.0.0.1:" + upstreamPort, "m", null);
            try (RouterServer router = RouterServer.start(c);
                 Socket s = new Socket(InetAddress.getLoopbackAddress(), router.port())) {
                Routers.await("the pod routable", 10_000, () -> router.pods.routable() == 1);
                s.setTcpNoDelay(true);
                s.setSoTimeout(10_000);
                final OutputStream out = s.getOutputStream();
                final InputStream in = new BufferedInputStream(s.getInputStream());
                final byte[] small = request(router.port(), 1_000);
                final byte[] large = request(router.port(), 4_000);
                for (int i = 0; i < WARM_UP; i++) {
                    exchange(out, in, (i & 1) == 0 ? small : large);
                }
                final long[] ids = routerThreads();
                long perSmall = Long.MAX_VALUE;
                long perLarge = Long.MAX_VALUE;
                for (int r = 0; r < ROUNDS; r++) {
                    perSmall = Math.min(perSmall, perRequest(ids, out, in, small));
                    perLarge = Math.min(perLarge, perRequest(ids, out, in, large));
                }
                return new Measured(perSmall, perLarge, names(ids));
            } finally {
                upstream.close().sync();
            }
        } finally {
            upstreamLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            Routers.deleteTree(work);
        }
    }

    private static long perRequest(final long[] ids, final OutputStream out, final InputStream in,
        final byte[] request) throws IOException {
        final long before = allocated(ids);
        for (int i = 0; i < MEASURED; i++) {
            exchange(out, in, request);
        }
        return (allocated(ids) - before) / MEASURED;
    }

    /** The router's event loops and deciding threads (not its housekeeping thread). */
    private static long[] routerThreads() {
        final List<Long> ids = new ArrayList<>();
        for (final Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("kvidx-router") && !t.getName().equals("kvidx-router-pods")
                && !t.getName().equals("kvidx-router-warm-up")) {
                ids.add(t.threadId());
            }
        }
        final long[] a = new long[ids.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = ids.get(i);
        }
        return a;
    }

    private static List<String> names(final long[] ids) {
        final List<String> names = new ArrayList<>();
        for (final Thread t : Thread.getAllStackTraces().keySet()) {
            for (final long id : ids) {
                if (t.threadId() == id) {
                    names.add(t.getName());
                }
            }
        }
        return names;
    }

    private static long allocated(final long[] ids) {
        final com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory
            .getThreadMXBean();
        long sum = 0;
        for (final long b : mx.getThreadAllocatedBytes(ids)) {
            sum += Math.max(0, b);
        }
        return sum;
    }

    /** A keep-alive token-id completion of {@code tokens} random ids, with a client's usual headers. */
    private static byte[] request(final int port, final int tokens) {
        final SplittableRandom random = new SplittableRandom(tokens);
        final StringBuilder body = new StringBuilder("{\"model\":\"m\",\"prompt\":[");
        for (int i = 0; i < tokens; i++) {
            body.append(i == 0 ? "" : ",").append(random.nextInt(150_000));
        }
        body.append("],\"max_tokens\":16,\"temperature\":0}");
        final byte[] b = body.toString().getBytes(StandardCharsets.US_ASCII);
        final String head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n"
            + "User-Agent: kvidx-alloc-test\r\nAccept: */*\r\nContent-Type: application/json\r\n"
            + "Authorization: Bearer sk-0123456789abcdef\r\nContent-Length: " + b.length + "\r\n\r\n";
        final byte[] h = head.getBytes(StandardCharsets.US_ASCII);
        final byte[] all = new byte[h.length + b.length];
        System.arraycopy(h, 0, all, 0, h.length);
        System.arraycopy(b, 0, all, h.length, b.length);
        return all;
    }

    /** Sends one request and reads its whole answer (a Content-Length framed 200). */
    private static void exchange(final OutputStream out, final InputStream in, final byte[] request)
        throws IOException {
        out.write(request);
        out.flush();
        final StringBuilder line = new StringBuilder();
        int length = -1;
        String status = null;
        while (true) {
            line.setLength(0);
            int ch;
            while ((ch = in.read()) != '\n') {
                if (ch < 0) {
                    throw new IOException("the router closed the connection");
                }
                if (ch != '\r') {
                    line.append((char) ch);
                }
            }
            if (line.isEmpty()) {
                break;
            }
            final String l = line.toString();
            if (status == null) {
                status = l;
            } else if (l.regionMatches(true, 0, "content-length:", 0, 15)) {
                length = Integer.parseInt(l.substring(15).trim());
            }
        }
        assertEquals("HTTP/1.1 200 OK", status);
        for (int i = 0; i < length; i++) {
            if (in.read() < 0) {
                throw new IOException("short answer");
            }
        }
    }

    /** Answers each request, once read, with the fixed completion. */
    private static final class Answer extends SimpleChannelInboundHandler<HttpObject> {
        private final ByteBuf answer;

        Answer(final ByteBuf answer) {
            this.answer = answer;
        }

        @Override
        protected void channelRead0(final ChannelHandlerContext ctx, final HttpObject msg) {
            if (msg instanceof LastHttpContent) {
                final DefaultFullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    HttpResponseStatus.OK, answer.duplicate());
                r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json")
                    .setInt(HttpHeaderNames.CONTENT_LENGTH, answer.readableBytes());
                ctx.writeAndFlush(r);
            }
        }
    }
}
