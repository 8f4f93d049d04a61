package io.kvidx.bench.ingest;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.HdrHistogram.Histogram;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * vLLM path latency: a JeroMQ PUB on loopback TCP publishes vLLM-format msgpack batches (one BlockStored of
 * {@code --blocks} fresh blocks each), the daemon subscribes, decodes, recomputes router keys and stores; the
 * publisher thread polls an {@link IndexReader} until the event's last block is visible. Events are paced at a
 * moderate rate; the time from send to visible goes into an HdrHistogram.
 *
 * <p>Baseline, same run: the same publisher, payloads and pacing to a bare JeroMQ SUB socket in another context,
 * read by a thread that polls it without blocking and yields like the daemon's ingest agent; the publisher
 * thread waits, the same way, until that thread has the message. The difference between the two is what kvidx
 * adds (decode, router keys, writer hand-off, index store) on top of the transport and this host's scheduler.
 *
 * <p>{@code java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
 * -cp bench/target/kvidx-bench.jar io.kvidx.bench.ingest.ZmqVisibilityLatency [events/s] [seconds] [blocks] [idle]}
 */
public final class ZmqVisibilityLatency {
    private ZmqVisibilityLatency() {
    }

    /**
     * @param args [events per second (2000)] [seconds (10)] [blocks per event (4)] [idle (yielding)].
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception {
        final int rate = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        final int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        final int blocks = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        final String idle = args.length > 3 ? args[3] : "yielding";
        final String model = "bench-model";
        final String pid = Long.toString(ProcessHandle.current().pid());
        final Path dir = Path.of("/dev/shm/kvidx-bench-zmq-" + pid);
        try (ZContext zmq = new ZContext(1)) {
            final ZMQ.Socket pub = zmq.createSocket(SocketType.PUB);
            pub.setSndHWM(100_000);
            pub.bind("tcp://127.0.0.1:*");
            final DaemonContext ctx = new DaemonContext().dir(dir).capacityBlocks(1L << 22).podTimeoutMs(0)
                .idleStrategy(idle).deleteOnClose(true);
            ctx.zmq().addEndpoint(new ZmqEndpoint(pub.getLastEndpoint(), "bench-pod", model, null));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                final RouterKeyHasher hasher = new RouterKeyHasher(16);
                final long seed = RouterKeyHasher.chainSeed(model, null, null);
                final long[] keys = new long[blocks];
                final long[] bits = new long[4];
                final Run run = paced(pub, "kv@bench-pod@" + model, rate, seconds, blocks, 3, new Probe() {
                    @Override
                    public void prepared(final int[] tokens) {
                        hasher.keys(seed, tokens, tokens.length, keys);
                    }

                    @Override
                    public boolean visible(final long seq) {
                        try {
                            return reader.lookup(keys[blocks - 1], bits);
                        } catch (final io.kvidx.client.index.IndexBusyException ex) {
                            return false; // the shard stayed locked past the read bound: look again
                        }
                    }
                });
                final Histogram histogram = run.histogram();
                final int lost = run.lost();
                System.out.print(daemon.counters().describe().lines()
                    .filter(l -> l.contains("stored") || l.contains("gaps") || l.contains("errors"))
                    .reduce("", (a, b) -> a + b + "\n"));
                System.out.printf("vLLM msgpack over ZeroMQ tcp loopback -> visible in the index (%d-block events, "
                        + "%d events/s, idle %s): p50 %.1f us, p90 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us "
                        + "(%d samples, %d not visible within 1 s)%n", blocks, rate, idle,
                    histogram.getValueAtPercentile(50) / 1e3, histogram.getValueAtPercentile(90) / 1e3,
                    histogram.getValueAtPercentile(99) / 1e3, histogram.getValueAtPercentile(99.9) / 1e3,
                    histogram.getMaxValue() / 1e3, histogram.getTotalCount(), lost);
            }
            final Histogram baseline = transportBaseline(pub, rate, seconds, blocks, model);
            System.out.printf("baseline, same run: bare JeroMQ PUB -> SUB on tcp loopback, received by a yielding "
                    + "poller thread: p50 %.1f us, p90 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us (%d samples)%n",
                baseline.getValueAtPercentile(50) / 1e3, baseline.getValueAtPercentile(90) / 1e3,
                baseline.getValueAtPercentile(99) / 1e3, baseline.getValueAtPercentile(99.9) / 1e3,
                baseline.getMaxValue() / 1e3, baseline.getTotalCount());
        }
        // The daemon deleted its index on close; the cell keeps its lock file by design: remove the run's directory.
        io.kvidx.bench.KvidxStore.deleteTree(dir);
    }

    /**
     * The transport alone: same publisher socket, payloads and pacing; a SUB socket in its own context, read by a
     * thread that polls without blocking and yields when idle (as the daemon's ingest agent does).
     */
    private static Histogram transportBaseline(final ZMQ.Socket pub, final int rate, final int seconds,
        final int blocks, final String model) throws InterruptedException {
        final java.util.concurrent.atomic.AtomicLong received = new java.util.concurrent.atomic.AtomicLong(-1);
        final java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
        try (ZContext subContext = new ZContext(1)) {
            final ZMQ.Socket sub = subContext.createSocket(SocketType.SUB);
            sub.subscribe("base@".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            sub.connect(pub.getLastEndpoint());
            final Thread receiver = Thread.ofPlatform().name("baseline-sub").start(() -> {
                while (running.get()) {
                    final byte[] topic = sub.recv(ZMQ.DONTWAIT);
                    if (topic == null) {
                        Thread.yield();
                        continue;
                    }
                    final byte[] seq = sub.recv(0);
                    sub.recv(0);
                    received.set(ByteBuffer.wrap(seq).getLong());
                }
            });
            final Run run = paced(pub, "base@bench-pod@" + model, rate, seconds, blocks, 5, new Probe() {
                @Override
                public void prepared(final int[] tokens) {
                    // Nothing to compute: the receiving thread reports the sequence it got.
                }

                @Override
                public boolean visible(final long seq) {
                    return received.get() == seq;
                }
            });
            running.set(false);
            receiver.join();
            return run.histogram();
        }
    }

    /** What a paced run measures: how to prepare for an event and when it counts as arrived. */
    private interface Probe {
        /**
         * @param tokens the token ids of the event about to be sent.
         */
        void prepared(int[] tokens);

        /**
         * @param seq the sequence number the event was sent with.
         * @return true once the event has arrived.
         */
        boolean visible(long seq);
    }

    /** Send-to-visible latencies of a paced run, and the events that never arrived within a second. */
    private record Run(Histogram histogram, int lost) {
    }

    /**
     * Publishes vLLM BlockStored batches at {@code rate} events per second for a warm-up plus {@code seconds},
     * each as three frames (topic, sequence, payload), and after each one waits, yielding, until the probe sees
     * it. Restarts once when the first event never arrives (ZeroMQ's slow joiner).
     */
    private static Run paced(final ZMQ.Socket pub, final String topic, final int rate, final int seconds,
        final int blocks, final long randomSeed, final Probe probe) {
        final SplittableRandom random = new SplittableRandom(randomSeed);
        final long[] hashes = new long[blocks];
        final int[] tokens = new int[blocks * 16];
        final Histogram histogram = new Histogram(10_000_000_000L, 3);
        final long interval = 1_000_000_000L / rate;
        final int warmup = Math.min(rate * 2, 5000);
        final int total = warmup + rate * seconds;
        long seq = 0;
        long next = System.nanoTime();
        int lost = 0;
        for (int i = 0; i < total; i++) {
            final byte[] payload = VllmBatches.stored(random, blocks, 16, hashes, tokens);
            probe.prepared(tokens);
            while (System.nanoTime() < next) {
                LockSupport.parkNanos(Math.min(next - System.nanoTime(), 200_000));
            }
            final long sent = System.nanoTime();
            final long sentSeq = seq++;
            pub.sendMore(topic);
            pub.sendMore(ByteBuffer.allocate(8).putLong(sentSeq).array());
            pub.send(payload, 0);
            boolean visible = false;
            while (System.nanoTime() - sent < 1_000_000_000L) {
                if (probe.visible(sentSeq)) {
                    visible = true;
                    break;
                }
                // Yield, not spin: on a 2-core host the daemon's threads need the core.
                Thread.yield();
            }
            final long latency = System.nanoTime() - sent;
            if (!visible) {
                lost++;
            } else if (i >= warmup) {
                histogram.recordValue(latency);
            }
            next = Math.max(next + interval, System.nanoTime());
            if (i == 0 && !visible) {
                // Slow joiner: the subscription was not up yet; start over.
                i = -1;
                LockSupport.parkNanos(10_000_000);
            }
        }
        return new Run(histogram, lost);
    }
}
