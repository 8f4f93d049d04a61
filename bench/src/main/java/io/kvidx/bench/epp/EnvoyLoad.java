package io.kvidx.bench.epp;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import org.HdrHistogram.Histogram;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * An open-loop ext_proc load, as Envoy's gateway puts it on an endpoint picker: request {@code i} is due at
 * {@code t0 + i / rate} whatever happened to the earlier ones; at its due time it opens a new {@code Process} stream
 * (one per HTTP request, as Envoy does) on one of a few HTTP/2 connections (Envoy's workers' connections, taken in
 * turn) and sends {@link EnvoyRequest}'s messages as its body mode says; its latency runs from the due time to the
 * answer that releases the whole request upstream ({@link EnvoyRequest#answers()}), so a picker that stalls is
 * charged for every request it delayed (no coordinated omission). Then it half-closes, as Envoy does when the
 * exchange it cares about ended (the response phase is not sent: it is not on the request's path).
 *
 * <p>Threads: the calling thread paces (parks until the next due time; every due request is started at once); gRPC's
 * event loops run the answers (direct executor). At most {@code maxInFlight} streams are open: beyond, due requests
 * wait in order in the client and are started as streams end, their latency still counted from their due time.
 *
 * <p><b>Note:</b> {@link #run} is called by one thread at a time.
 */
final class EnvoyLoad implements AutoCloseable {
    /** Highest latency recorded, ns. */
    static final long HIGHEST_NS = TimeUnit.SECONDS.toNanos(120);
    /**
     * The HTTP/2 flow-control window, as Envoy's (its default {@code initial_stream_window_size}, 256 MiB); a fixed
     * window also turns off grpc-java's automatic tuning, whose BDP pings Envoy does not send.
     */
    static final int ENVOY_WINDOW_BYTES = 256 << 20;

    private final ManagedChannel[] channels;
    private final ExternalProcessorGrpc.ExternalProcessorStub[] stubs;
    private final int maxInFlight;

    /**
     * One run's figures.
     *
     * @param offered      requests due.
     * @param picked       answered with a pick.
     * @param errors       answered otherwise (an immediate response, no pick), or the stream failed.
     * @param unfinished   not answered by the end of the drain (recorded as answered then).
     * @param achievedPerS answered / (last answer - t0).
     * @param latency      due time to the answer that releases the request, ns.
     * @param late         pacer lateness (stream started - due), ns.
     */
    record Result(long offered, long picked, long errors, long unfinished, double achievedPerS, Histogram latency,
        Histogram late) {
    }

    /**
     * @param port        the picker's gRPC port on loopback.
     * @param connections HTTP/2 connections, streams spread over them in turn.
     * @param maxInFlight most streams open at once.
     */
    EnvoyLoad(final int port, final int connections, final int maxInFlight) {
        this.channels = new ManagedChannel[connections];
        this.stubs = new ExternalProcessorGrpc.ExternalProcessorStub[connections];
        for (int i = 0; i < connections; i++) {
            channels[i] = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().directExecutor()
                .flowControlWindow(ENVOY_WINDOW_BYTES).maxInboundMessageSize(64 << 20).build();
            stubs[i] = ExternalProcessorGrpc.newStub(channels[i]);
        }
        this.maxInFlight = maxInFlight;
    }

    /**
     * Sends one request and waits for its pick (the sanity pass before the load).
     *
     * @param request the messages.
     * @return the endpoint picked, or null (an immediate response or an error).
     * @throws InterruptedException when interrupted.
     */
    String pickOnce(final EnvoyRequest request) throws InterruptedException {
        final Run run = new Run(1, System.nanoTime());
        final Call c = new Call(run, 0, System.nanoTime(), request, true);
        run.inFlight.incrementAndGet();
        c.start(stubs[0]);
        if (!run.done.await(10, TimeUnit.SECONDS)) {
            return null;
        }
        return c.pick;
    }

    /**
     * Warms the picker (and this client) up, closed loop: {@code concurrency} requests in flight, each sent as soon
     * as the one before it is answered, for {@code durationNs}; so the JIT reaches its steady state without a backlog
     * building up at a rate the cold picker cannot sustain yet.
     *
     * @param requests    the requests, sent in turn.
     * @param durationNs  how long.
     * @param concurrency requests in flight.
     * @return requests answered.
     * @throws InterruptedException when interrupted.
     */
    long warmUp(final EnvoyRequest[] requests, final long durationNs, final int concurrency)
        throws InterruptedException {
        final long end = System.nanoTime() + durationNs;
        final AtomicLong answered = new AtomicLong();
        final Thread[] threads = new Thread[concurrency];
        for (int t = 0; t < concurrency; t++) {
            final int first = t;
            threads[t] = new Thread(() -> {
                int i = first;
                try {
                    while (System.nanoTime() < end) {
                        final Run run = new Run(1, System.nanoTime());
                        final Call c = new Call(run, 0, System.nanoTime(), requests[i % requests.length], false);
                        i += concurrency;
                        run.inFlight.incrementAndGet();
                        c.start(stubs[i % stubs.length]);
                        if (!run.done.await(10, TimeUnit.SECONDS)) {
                            return;
                        }
                        answered.incrementAndGet();
                    }
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }, "kvidx-bench-epp-warmup-" + t);
            threads[t].start();
        }
        for (final Thread t : threads) {
            t.join();
        }
        return answered.get();
    }

    /**
     * Offers {@code rate} requests per second for {@code durationNs}, then waits up to {@code drainNs} for the
     * answers, and up to {@code drainNs} more for the streams to end (so the next run starts on an idle picker).
     *
     * @param requests   the requests, sent in turn.
     * @param rate       requests per second.
     * @param durationNs how long requests are offered.
     * @param drainNs    how long to wait for answers after the last one is due.
     * @return the figures.
     * @throws InterruptedException when interrupted.
     */
    Result run(final EnvoyRequest[] requests, final double rate, final long durationNs, final long drainNs)
        throws InterruptedException {
        final int offered = (int) Math.max(1, Math.min(Integer.MAX_VALUE - 1, durationNs / 1e9 * rate));
        final Histogram late = new Histogram(HIGHEST_NS, 3);
        final long t0 = System.nanoTime() + 10_000_000L;
        final Run run = new Run(offered, t0);
        final double intervalNs = 1e9 / rate;
        int i = 0;
        while (i < offered) {
            final long now = System.nanoTime();
            final long due = t0 + (long) (i * intervalNs);
            if (due > now) {
                LockSupport.parkNanos(due - now);
                continue;
            }
            while (i < offered && t0 + (long) (i * intervalNs) <= now) {
                final long d = t0 + (long) (i * intervalNs);
                late.recordValue(Math.min(HIGHEST_NS, now - d));
                run.pending.add(new Call(run, i, d, requests[i % requests.length], false));
                i++;
            }
            run.startPending();
        }
        final long lastDue = t0 + (long) ((offered - 1) * intervalNs);
        run.done.await(Math.max(0, lastDue + drainNs - System.nanoTime()), TimeUnit.NANOSECONDS);
        final long end = System.nanoTime();
        final Histogram latency = new Histogram(HIGHEST_NS, 3);
        long unfinished = 0;
        for (int k = 0; k < offered; k++) {
            long v = run.latencies[k];
            if (v == 0) {
                unfinished++;
                v = end - (t0 + (long) (k * intervalNs));
            }
            latency.recordValue(Math.max(1, Math.min(HIGHEST_NS, v)));
        }
        final long answered = run.picked.get() + run.errors.get();
        final double span = (run.lastAnswer.get() - t0) / 1e9;
        // Let the streams still open end (or the backlog of a rate the picker could not sustain drain) before the
        // next run; the ones still open then are the picker's to time out.
        final long settle = System.nanoTime() + drainNs;
        while ((run.inFlight.get() > 0 || !run.pending.isEmpty()) && System.nanoTime() < settle) {
            Thread.sleep(5);
        }
        return new Result(offered, run.picked.get(), run.errors.get(), unfinished,
            span > 0 ? answered / span : 0, latency, late);
    }

    @Override
    public void close() {
        for (final ManagedChannel c : channels) {
            c.shutdownNow();
        }
        try {
            for (final ManagedChannel c : channels) {
                c.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /** One run's shared state: latencies by request (written once each, read after {@link #done}). */
    private final class Run {
        final long[] latencies;
        final CountDownLatch done;
        final AtomicLong picked = new AtomicLong();
        final AtomicLong errors = new AtomicLong();
        final AtomicLong lastAnswer = new AtomicLong();
        final AtomicInteger inFlight = new AtomicInteger();
        final ConcurrentLinkedQueue<Call> pending = new ConcurrentLinkedQueue<>();
        final AtomicInteger nextConnection = new AtomicInteger();

        Run(final int offered, final long t0) {
            this.latencies = new long[offered];
            this.done = new CountDownLatch(offered);
            this.lastAnswer.set(t0);
        }

        /** Starts waiting requests while fewer than {@code maxInFlight} streams are open (any thread). */
        void startPending() {
            while (!pending.isEmpty()) {
                final int n = inFlight.get();
                if (n >= maxInFlight) {
                    return;
                }
                if (!inFlight.compareAndSet(n, n + 1)) {
                    continue;
                }
                final Call c = pending.poll();
                if (c == null) {
                    inFlight.decrementAndGet();
                    return;
                }
                c.start(stubs[Math.floorMod(nextConnection.getAndIncrement(), stubs.length)]);
            }
        }

        void answered(final int index, final long due, final boolean pick) {
            final long now = System.nanoTime();
            latencies[index] = Math.max(1, now - due);
            (pick ? picked : errors).incrementAndGet();
            lastAnswer.accumulateAndGet(now, Math::max);
            done.countDown();
        }

        void ended() {
            inFlight.decrementAndGet();
            startPending();
        }
    }

    /**
     * One request's stream, Envoy's side. Its request observer is used by the pacer (the first messages) and the
     * event loop (BUFFERED's body, the half-close), never at once: every entry point is {@code synchronized}.
     */
    private static final class Call implements StreamObserver<ProcessingResponse> {
        private final Run run;
        private final int index;
        private final long due;
        private final EnvoyRequest request;
        private final boolean wantPick;
        private StreamObserver<ProcessingRequest> out;
        private int received;
        private boolean answered;
        private boolean ended;
        private String pick;

        /** @param wantPick keep the endpoint picked (else only whether there was a pick: nothing decoded). */
        Call(final Run run, final int index, final long due, final EnvoyRequest request, final boolean wantPick) {
            this.run = run;
            this.index = index;
            this.due = due;
            this.request = request;
            this.wantPick = wantPick;
        }

        synchronized void start(final ExternalProcessorGrpc.ExternalProcessorStub stub) {
            out = stub.process(this);
            out.onNext(request.headers());
            if (request.mode() != EnvoyRequest.Mode.BUFFERED) {
                for (final ProcessingRequest chunk : request.body()) {
                    out.onNext(chunk);
                }
            }
        }

        @Override
        public synchronized void onNext(final ProcessingResponse r) {
            if (answered) {
                return;
            }
            received++;
            if (r.hasImmediateResponse()) {
                finish(false);
                return;
            }
            if (received == 1 && request.mode() == EnvoyRequest.Mode.BUFFERED) {
                if (!r.hasRequestHeaders()) {
                    finish(false);
                    return;
                }
                for (final ProcessingRequest chunk : request.body()) {
                    out.onNext(chunk); // Envoy sends the buffered body once the headers' answer is back
                }
                return;
            }
            if (EnvoyRequest.isPick(r)) {
                pick = wantPick ? EnvoyRequest.pickOf(r) : "";
            }
            if (received == request.answers()) {
                finish(pick != null);
            }
        }

        private void finish(final boolean picked) {
            answered = true;
            run.answered(index, due, picked);
            out.onCompleted();
        }

        @Override
        public synchronized void onError(final Throwable t) {
            if (!answered) {
                answered = true;
                run.answered(index, due, false);
            }
            end();
        }

        @Override
        public synchronized void onCompleted() {
            if (!answered) {
                answered = true;
                run.answered(index, due, false);
            }
            end();
        }

        private void end() {
            if (!ended) {
                ended = true;
                run.ended();
            }
        }
    }
}
