package io.kvidx.daemon.serve;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestHeartbeat;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.membership.Membership;
import io.kvidx.serve.BodyLimit;
import io.kvidx.serve.HttpPipeline;
import io.kvidx.serve.RequestSequencer;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalIoHandler;
import io.netty.channel.local.LocalServerChannel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Coverage-guided fuzzing (Jazzer) of the daemon's HTTP doors: any bytes, as one client's raw HTTP/1.1 (possibly
 * several pipelined requests), go through the daemon API's real connection pipeline ({@link IndexHttpServer#pipeline}:
 * codec, body limit, sequencer, bearer authentication with a token and an admin token, {@link ApiHandler}) over a
 * small index with a pod holding a chain, a membership table whose transport subscribes at once, and a fixed snapshot. The
 * properties: no exception reaches the end of the pipeline; every answer written is a well-formed HTTP/1.1 response
 * (status line, headers, Content-Length and exactly that body) with a status of the documented set
 * (docs/service-api.md, "Errors"; a {@code 100 Continue} is an interim answer); a connection never answers more
 * requests than it was sent, and, while it stays open, answers every request it read whole; nothing waits past 5 s.
 *
 * <p>The connection is Netty's in-VM transport ({@link LocalChannel}) on a real event loop rather than an
 * {@code EmbeddedChannel}: registrations, unregistrations and dumps answer from the membership's and the snapshot's
 * own threads (and a costly query from a query thread) through the event loop, which an {@code EmbeddedChannel}'s
 * loop (in its event loop on every thread, not thread safe) cannot take. Everything heavy (index, membership, event loop, pipeline) is built once.
 */
class HttpDoorJazzerTest {
    /** The query token. */
    static final String TOKEN = "kvidx-fuzz-token-5e2b9d41";
    /** The admin token ({@code /dump}, {@code /metrics}). */
    static final String ADMIN = "kvidx-fuzz-admin-7a3c0f18";
    /** The statuses docs/service-api.md documents, and 100 Continue (interim). */
    private static final Set<Integer> DOCUMENTED = Set.of(100, 200, 201, 400, 401, 403, 404, 405, 409, 413, 415, 422,
        429, 501, 503);
    private static final long WAIT_NS = TimeUnit.SECONDS.toNanos(5);

    @FuzzTest(maxDuration = "10m")
    // No CR or LF in an entry: jazzer-junit 0.30.0 writes them unescaped into libFuzzer's dictionary file, which
    // then fails to parse (the seeds hold the line ends).
    @DictionaryEntries({"POST ", "GET ", "HEAD ", " HTTP/1.1", " HTTP/1.0", "Authorization: Bearer " + TOKEN,
        "Authorization: Bearer " + ADMIN, "Content-Type: application/json", "Content-Length: ",
        "Transfer-Encoding: chunked", "Connection: close", "Expect: 100-continue", "/query", "/query_by_hash",
        "/register", "/unregister", "/workers", "/health", "/metrics", "/dump", "?format=dynamo", "/peers",
        "/register_peer", "/mooncake", "\"token_ids\":", "\"router_keys\":", "\"block_hashes\":",
        "\"instance_id\":", "\"endpoint\":", "\"model_name\":", "\"tenant_id\":", "\"dp_rank\":",
        "tcp://127.0.0.1:5557"})
    void shouldAnswerAnyBytesWithWellFormedDocumentedResponses(final byte[] input) throws Exception {
        Door.INSTANCE.exchange(input);
    }

    /** The server, built once: index, membership, API handler, one event loop, the in-VM listener. */
    static final class Door {
        static final Door INSTANCE = new Door();

        private final Membership membership;
        private final EventLoopGroup loop;
        private final LocalAddress address = new LocalAddress("kvidx-http-door-fuzz");
        private volatile Server current;

        private Door() {
            try {
                final Path dir = Files.createTempDirectory(Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm")
                    : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-door-fuzz");
                // The door lives as long as the fuzzing JVM; deleteOnExit cannot delete a directory with files in it.
                Runtime.getRuntime().addShutdownHook(new Thread(() -> org.agrona.IoUtil.delete(dir.toFile(), true)));
                final IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("fuzz")
                    .shardCount(4).capacityBlocks(1024).maxPods(16).deleteOnClose(true));
                final int slot = writer.registerPod("7", "m");
                final int[] tokens = new int[64];
                for (int i = 0; i < tokens.length; i++) {
                    tokens[i] = i + 1;
                }
                final long[] keys = new long[tokens.length];
                final RouterKeyHasher hasher = new RouterKeyHasher(writer.context().blockSize());
                final int n = hasher.keys(RouterKeyHasher.chainSeed("m", null, null), tokens, tokens.length, keys);
                writer.store(slot, keys, 0, n);
                // Beats for the life of the JVM (the door is one per fuzzing JVM).
                final TestHeartbeat beat = new TestHeartbeat(writer);
                final IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("fuzz")
                    .attachTimeoutMs(5_000));
                membership = new Membership(null, TestFleet.INSTANT).maxRegistrations(2);
                membership.start(List.of());
                final FleetApi fleet = TestFleet.of(membership, 2_000,
                    "kvidx-snapshot".getBytes(StandardCharsets.US_ASCII), "kvidx_fuzz 1\n");
                final Path token = Files.writeString(dir.resolve("token"), TOKEN);
                final Path admin = Files.writeString(dir.resolve("admin"), ADMIN);
                // The daemon's own server (its TCP listener on loopback is never used): its pipeline is the one the
                // in-VM connections below run.
                final IndexHttpServer server = IndexHttpServer.start(new InetSocketAddress(
                    InetAddress.getLoopbackAddress(), 0), 1, false, 64 << 10,
                    new IndexHttpServer.Guards(64, 15_000, token, admin), reader, null, null, fleet);
                final HttpPipeline pipeline = server.pipeline();
                loop = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("fuzz-http-loop", true),
                    LocalIoHandler.newFactory());
                new ServerBootstrap().group(loop).channel(LocalServerChannel.class)
                    .childHandler(new ChannelInitializer<LocalChannel>() {
                        @Override
                        protected void initChannel(final LocalChannel ch) {
                            pipeline.accept(ch.pipeline());
                            current = new Server(ch.pipeline());
                        }
                    }).bind(address).sync();
            } catch (final Exception ex) {
                throw new IllegalStateException("cannot build the door", ex);
            }
        }

        /** Sends {@code input} on a new connection, waits for its answers, checks them, closes. */
        void exchange(final byte[] input) throws Exception {
            forgetRegistrations();
            final Client client = new Client();
            current = null;
            final Channel channel = new Bootstrap().group(loop).channel(LocalChannel.class).handler(client)
                .connect(address).sync().channel();
            final long deadline = System.nanoTime() + WAIT_NS;
            Server server;
            while ((server = current) == null) {
                if (System.nanoTime() > deadline) {
                    channel.close();
                    fail("the server side of the connection never came up");
                }
                Thread.onSpinWait();
            }
            final Server s = server;
            // Queued on the loop before the polls below: each poll runs after the bytes were written.
            channel.writeAndFlush(Unpooled.wrappedBuffer(input));
            Object[] settled;
            for (int polls = 0; (settled = loop.submit(() -> s.settled(input.length) ? new Object[] {s.state(),
                client.received()} : null).get()) == null; polls++) {
                if (System.nanoTime() > deadline) {
                    channel.close();
                    fail("the connection did not settle within 5 s: " + loop.submit(s::state).get());
                }
                if (polls > 100) {
                    // An answer from another thread (a registration, a dump, a costly query) is on its way.
                    Thread.sleep(1);
                }
            }
            channel.close();
            // The answers reach the client inline (one loop, LocalChannel), before the poll that saw it settle.
            check((Server.State) settled[0], (byte[]) settled[1]);
        }

        /** Each input starts from no API registration (a registration of one input must not refuse the next). */
        private void forgetRegistrations() throws Exception {
            for (final Engine e : membership.engines().values()) {
                membership.unregister(e.instanceId(), -1).get(5, TimeUnit.SECONDS);
            }
        }

        private static void check(final Server.State state, final byte[] bytes) {
            if (state.exception != null) {
                throw new AssertionError("an exception reached the end of the pipeline", state.exception);
            }
            int pos = 0;
            int answers = 0;
            while (pos < bytes.length) {
                final int headEnd = indexOf(bytes, pos, "\r\n\r\n");
                assertTrue(headEnd > 0, "an answer without the end of its head: " + text(bytes, pos));
                final String head = new String(bytes, pos, headEnd - pos, StandardCharsets.ISO_8859_1);
                final String[] lines = head.split("\r\n", -1);
                assertTrue(lines[0].matches("HTTP/1\\.1 [1-5][0-9][0-9] [ -~]*"), "a bad status line: " + head);
                final int status = Integer.parseInt(lines[0].substring(9, 12));
                assertTrue(DOCUMENTED.contains(status), "an undocumented status " + status + ": " + head);
                long length = -1;
                for (int i = 1; i < lines.length; i++) {
                    final int colon = lines[i].indexOf(':');
                    assertTrue(colon > 0 && lines[i].substring(0, colon).matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+"),
                        "a bad header line: " + head);
                    if (lines[i].substring(0, colon).equalsIgnoreCase("content-length")) {
                        assertEquals(-1, length, "two Content-Lengths: " + head);
                        length = Long.parseLong(lines[i].substring(colon + 1).trim());
                    }
                }
                pos = headEnd + 4;
                if (status == 100) {
                    continue;
                }
                final String method = answers < state.methods.size() ? state.methods.get(answers) : "?";
                answers++;
                assertTrue(length >= 0, "an answer without Content-Length: " + head);
                final long body = "HEAD".equals(method) ? 0 : length;
                assertTrue(pos + body <= bytes.length, "an answer shorter than its Content-Length: " + head);
                pos += (int) body;
            }
            assertTrue(answers <= state.requests, answers + " answers to " + state.requests + " requests");
            if (state.open) {
                assertEquals(state.whole, answers, "an open connection left a whole request unanswered");
            }
        }

        private static int indexOf(final byte[] b, final int from, final String s) {
            final byte[] n = s.getBytes(StandardCharsets.US_ASCII);
            outer:
            for (int i = from; i + n.length <= b.length; i++) {
                for (int k = 0; k < n.length; k++) {
                    if (b[i + k] != n[k]) {
                        continue outer;
                    }
                }
                return i;
            }
            return -1;
        }

        private static String text(final byte[] b, final int from) {
            return new String(b, from, Math.min(400, b.length - from), StandardCharsets.ISO_8859_1);
        }
    }

    /** The server side of one connection: what came in, what was handed on, and whether something escaped. */
    private static final class Server {
        /** A snapshot of the connection, taken on its event loop. */
        record State(boolean open, long bytesIn, int requests, int whole, int handedOn, boolean inFlight,
            List<String> methods, Throwable exception) {
        }

        private final ChannelPipeline pipeline;
        private final RequestSequencer sequencer;
        private final List<String> methods = new ArrayList<>();
        private long bytesIn;
        private int whole;
        private int handedOn;
        private Throwable exception;

        Server(final ChannelPipeline pipeline) {
            this.pipeline = pipeline;
            this.sequencer = pipeline.get(RequestSequencer.class);
            pipeline.addFirst("fuzz-bytes", new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
                    if (msg instanceof ByteBuf b) {
                        bytesIn += b.readableBytes();
                    }
                    ctx.fireChannelRead(msg);
                }
            });
            pipeline.addAfter(pipeline.context(HttpServerCodec.class).name(), "fuzz-heads",
                new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
                        if (msg instanceof HttpRequest r) {
                            methods.add(r.method().name());
                        }
                        ctx.fireChannelRead(msg);
                    }
                });
            pipeline.addBefore(pipeline.context(RequestSequencer.class).name(), "fuzz-whole",
                new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
                        if (msg instanceof FullHttpRequest || msg instanceof BodyLimit.TooLarge) {
                            whole++;
                        }
                        ctx.fireChannelRead(msg);
                    }
                });
            pipeline.addAfter(pipeline.context(RequestSequencer.class).name(), "fuzz-handed-on",
                new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
                        if (msg instanceof FullHttpRequest || msg instanceof BodyLimit.TooLarge) {
                            handedOn++;
                        }
                        ctx.fireChannelRead(msg);
                    }
                });
            pipeline.addLast("fuzz-escaped", new ChannelInboundHandlerAdapter() {
                @Override
                public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
                    if (exception == null) {
                        exception = cause;
                    }
                    ctx.close();
                }
            });
        }

        /** On the event loop: every byte read, every whole request handed on and answered, or the connection gone. */
        boolean settled(final int length) {
            final boolean open = pipeline.channel().isActive();
            return !open || bytesIn == length && handedOn == whole && !sequencer.inFlight();
        }

        State state() {
            return new State(pipeline.channel().isActive(), bytesIn, methods.size(), whole, handedOn,
                sequencer.inFlight(), List.copyOf(methods), exception);
        }
    }

    /** The client side: keeps every byte the server wrote. */
    private static final class Client extends ChannelInboundHandlerAdapter {
        private final ByteArrayOutputStream received = new ByteArrayOutputStream();

        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
            if (msg instanceof ByteBuf b) {
                final byte[] copy = new byte[b.readableBytes()];
                b.readBytes(copy);
                received.writeBytes(copy);
            }
            io.netty.util.ReferenceCountUtil.release(msg);
        }

        byte[] received() {
            return received.toByteArray();
        }
    }
}
