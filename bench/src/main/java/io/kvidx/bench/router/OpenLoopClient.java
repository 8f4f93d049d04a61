package io.kvidx.bench.router;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.HdrHistogram.Histogram;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * An open-loop HTTP/1.1 load generator: request {@code i} is due at {@code t0 + i / rate}, whatever happened to the
 * earlier ones, and its latency is measured from that intended time to the last byte of its answer, so a server that
 * stalls is charged for every request it delayed (no coordinated omission).
 *
 * <p>How: the calling thread paces (parks until the next due time, then hands every due request to the event loop
 * in one task); one Netty event loop owns the connections (keep-alive, one request in flight per connection, no
 * pipelining): a due request takes an idle connection, or opens a new one (up to {@code maxConnections}), or waits
 * in order for the next connection that frees. Requests are pre-encoded (head and body in one buffer, written as is);
 * answers are decoded by Netty's {@link HttpResponseDecoder} and only their status and end are looked at.
 *
 * <p>Sends leave late by the pacer's wake-up (parkNanos, tens of microseconds); that lateness is measured and is
 * part of every target's latency alike.
 *
 * <p><b>Note:</b> {@link #run} is called by one thread at a time.
 */
final class OpenLoopClient implements AutoCloseable {
    /**
     * Most connections open at once: a client fleet's pool. Beyond it, due requests queue in the client (their
     * latency still counts from their intended time), so a stalled target is not also flooded with new connections.
     */
    static final int MAX_CONNECTIONS = 256;
    /** Connections opened before the clock starts. */
    static final int INITIAL_CONNECTIONS = 16;
    private static final long HIGHEST_NS = TimeUnit.SECONDS.toNanos(120);

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("kvidx-bench-load", true), NioIoHandler.newFactory());
    private final EventLoop loop = group.next();

    /**
     * One run's figures.
     *
     * @param offered     requests due.
     * @param completed   answered with a 2xx.
     * @param errors      answered otherwise, or the connection failed.
     * @param unfinished  not answered by the end of the drain (their latency is recorded as at least the drain's end).
     * @param achievedPerS completed / (last answer - t0).
     * @param latency     intended send to last byte, ns.
     * @param late        pacer lateness (actual hand-off - intended), ns.
     * @param connections connections opened during the run (more than {@link #MAX_CONNECTIONS} when the target
     *                    closed some).
     */
    record Result(long offered, long completed, long errors, long unfinished, double achievedPerS,
        Histogram latency, Histogram late, int connections) {
    }

    /**
     * Offers {@code rate} requests per second for {@code durationNs}, then waits up to {@code drainNs} for the
     * answers.
     *
     * @param target     the server.
     * @param requests   pre-encoded requests (head and body), sent in turn; not released.
     * @param rate       requests per second.
     * @param durationNs how long requests are offered.
     * @param drainNs    how long to wait for answers after the last one is due.
     * @return the figures.
     * @throws InterruptedException when interrupted.
     */
    Result run(final InetSocketAddress target, final ByteBuf[] requests, final double rate, final long durationNs,
        final long drainNs) throws InterruptedException {
        final long offered = Math.max(1, (long) (durationNs / 1e9 * rate));
        final Run run = new Run(target, requests, rate, offered);
        final CountDownLatch opened = new CountDownLatch(INITIAL_CONNECTIONS);
        loop.execute(() -> {
            for (int i = 0; i < INITIAL_CONNECTIONS; i++) {
                run.connect(opened);
            }
        });
        if (!opened.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("cannot open " + INITIAL_CONNECTIONS + " connections to " + target);
        }
        final Histogram late = new Histogram(HIGHEST_NS, 3);
        final long t0 = System.nanoTime() + 20_000_000L;
        loop.execute(() -> run.t0 = t0);
        long i = 0;
        while (i < offered) {
            final long now = System.nanoTime();
            final long due = run.due(t0, i);
            if (due > now) {
                LockSupport.parkNanos(due - now);
                continue;
            }
            long upTo = i;
            while (upTo < offered && run.due(t0, upTo) <= now) {
                late.recordValue(Math.min(HIGHEST_NS, now - run.due(t0, upTo)));
                upTo++;
            }
            final long submit = upTo;
            loop.execute(() -> run.submit(submit));
            i = upTo;
        }
        run.finished.await(drainNs, TimeUnit.NANOSECONDS);
        try {
            return loop.submit(() -> run.result(late)).get();
        } catch (final ExecutionException ex) {
            throw new IllegalStateException(ex.getCause());
        }
    }

    @Override
    public void close() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }

    /** One run's state; confined to the event loop (but for the latch and the constants). */
    private final class Run {
        final InetSocketAddress target;
        final ByteBuf[] requests;
        final double nsPerRequest;
        final long offered;
        final CountDownLatch finished = new CountDownLatch(1);
        final Histogram latency = new Histogram(HIGHEST_NS, 3);
        final ArrayDeque<Conn> idle = new ArrayDeque<>();
        final List<Channel> channels = new ArrayList<>();
        long t0;
        long submitted;
        long assigned;
        long completed;
        long errors;
        long lastAnswerNs;
        int open;
        int connecting;
        boolean closed;

        Run(final InetSocketAddress target, final ByteBuf[] requests, final double rate, final long offered) {
            this.target = target;
            this.requests = requests;
            this.nsPerRequest = 1e9 / rate;
            this.offered = offered;
        }

        long due(final long start, final long i) {
            return start + (long) (i * nsPerRequest);
        }

        void connect(final CountDownLatch opened) {
            connecting++;
            final Conn conn = new Conn(this);
            final ChannelFuture f = new Bootstrap().group(loop).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true).option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5_000)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(final SocketChannel ch) {
                        ch.pipeline().addLast(new HttpResponseDecoder()).addLast(conn);
                    }
                }).connect(target);
            f.addListener(cf -> {
                connecting--;
                if (cf.isSuccess()) {
                    open++;
                    conn.channel = f.channel();
                    channels.add(conn.channel);
                    idle.addLast(conn);
                    if (opened != null) {
                        opened.countDown();
                    }
                    dispatch();
                } else if (submitted > assigned && open == 0 && connecting == 0) {
                    // Nothing can carry the waiting requests: count them as failed.
                    errors += submitted - assigned;
                    assigned = submitted;
                    checkFinished();
                }
            });
        }

        void submit(final long upTo) {
            submitted = upTo;
            dispatch();
        }

        void dispatch() {
            while (!closed && assigned < submitted) {
                final Conn c = idle.pollFirst();
                if (c == null) {
                    final long waiting = submitted - assigned;
                    while (connecting < waiting && open + connecting < MAX_CONNECTIONS) {
                        connect(null);
                    }
                    return;
                }
                final long i = assigned++;
                c.send(due(t0, i), requests[(int) (i % requests.length)]);
            }
        }

        void answered(final Conn c, final int status, final long now) {
            latency.recordValue(Math.min(HIGHEST_NS, Math.max(0, now - c.intendedNs)));
            if (status >= 200 && status < 300) {
                completed++;
            } else {
                errors++;
            }
            lastAnswerNs = now;
            idle.addLast(c);
            dispatch();
            checkFinished();
        }

        void lost(final Conn c, final boolean inFlight) {
            open--;
            idle.remove(c);
            if (inFlight) {
                errors++;
                checkFinished();
            }
            dispatch();
        }

        void checkFinished() {
            if (completed + errors >= offered) {
                finished.countDown();
            }
        }

        Result result(final Histogram late) {
            final long now = System.nanoTime();
            final long unfinished = Math.max(0, offered - completed - errors);
            // Not answered: at least this late (from their intended times; those never sent count from theirs).
            for (long i = offered - unfinished; i < offered; i++) {
                latency.recordValue(Math.min(HIGHEST_NS, Math.max(0, now - due(t0, i))));
            }
            final double span = Math.max(lastAnswerNs, t0 + (long) (offered * nsPerRequest)) - t0;
            final int connections = channels.size();
            closed = true;
            for (final Channel ch : channels) {
                ch.close();
            }
            return new Result(offered, completed, errors, unfinished, completed / (span / 1e9), latency, late,
                connections);
        }
    }

    /** One connection: at most one request in flight. */
    private static final class Conn extends SimpleChannelInboundHandler<HttpObject> {
        private final Run run;
        Channel channel;
        long intendedNs;
        boolean inFlight;
        int status;

        Conn(final Run run) {
            this.run = run;
        }

        void send(final long intended, final ByteBuf request) {
            intendedNs = intended;
            inFlight = true;
            status = 0;
            channel.writeAndFlush(request.retainedDuplicate());
        }

        @Override
        protected void channelRead0(final ChannelHandlerContext ctx, final HttpObject msg) {
            if (msg instanceof HttpResponse r) {
                status = r.status().code();
            }
            if (msg instanceof LastHttpContent && inFlight) {
                inFlight = false;
                run.answered(this, status, System.nanoTime());
            }
        }

        @Override
        public void channelInactive(final ChannelHandlerContext ctx) {
            final boolean was = inFlight;
            inFlight = false;
            run.lost(this, was);
        }

        @Override
        public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
            ctx.close();
        }
    }
}
