package io.kvidx.bench.ingest;

import io.kvidx.client.index.IndexBusyException;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Event-to-visible through NATS JetStream beside direct ZeroMQ, in one run (ADR 0024): a JeroMQ PUB on loopback
 * publishes vLLM BlockStored batches at a steady rate; a daemon subscribed to it directly, and a relay subscribed to
 * it that publishes to a {@code nats-server -js} this bench starts on a free loopback port, whose stream a third
 * daemon consumes. After each send the publisher thread polls both daemons' indexes until the batch's last block is
 * visible in each; the two send-to-visible times of every batch go into two HdrHistograms. Not a test: figures for
 * docs/jetstream.md.
 *
 * <p>{@code java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
 * -cp bench/target/kvidx-bench.jar io.kvidx.bench.ingest.JetStreamVisibilityLatency [events/s] [seconds] [blocks]}
 * (nats-server from the Debian package nats-server must be installed).
 */
public final class JetStreamVisibilityLatency {
    private static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(2);

    private JetStreamVisibilityLatency() {
    }

    /**
     * @param args [events per second (500)] [seconds (10)] [blocks per event (4)].
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception {
        final int rate = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        final int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        final int blocks = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        final String model = "bench-model";
        final Path dir = Path.of("/dev/shm/kvidx-bench-jetstream-" + ProcessHandle.current().pid());
        final NatsProcess nats = NatsProcess.start(Path.of(System.getProperty("java.io.tmpdir")), "kvidx-bench-nats");
        try (ZContext zmq = new ZContext(1)) {
            final String url = nats.url();
            final ZMQ.Socket pub = zmq.createSocket(SocketType.PUB);
            pub.setSndHWM(100_000);
            pub.bind("tcp://127.0.0.1:*");
            final ZmqEndpoint endpoint = new ZmqEndpoint(pub.getLastEndpoint(), "bench-pod", model, null);
            final DaemonContext direct = context(dir, "direct");
            direct.zmq().addEndpoint(endpoint);
            final DaemonContext relay = context(dir, "relay");
            relay.zmq().addEndpoint(endpoint);
            relay.jetstream().url(url).role("relay");
            final DaemonContext consumer = context(dir, "consumer");
            consumer.jetstream().url(url).role("consumer").snapshotIntervalMs(0);
            try (KvidxDaemon d = KvidxDaemon.start(direct);
                KvidxDaemon r = KvidxDaemon.start(relay);
                KvidxDaemon c = KvidxDaemon.start(consumer);
                IndexReader directIndex = reader(dir, "direct");
                IndexReader streamIndex = reader(dir, "consumer")) {
                final Histogram[] h = run(pub, "kv@bench-pod@" + model, model, rate, seconds, blocks, directIndex,
                    streamIndex);
                System.out.printf("vLLM batches (%d blocks, %d/s, %d s) on one host, send -> visible:%n", blocks,
                    rate, seconds);
                print("  direct ZeroMQ -> daemon               ", h[0]);
                print("  ZeroMQ -> relay -> JetStream -> daemon", h[1]);
                System.out.printf("  not visible within 2 s: direct %d, through JetStream %d%n", h[2].getTotalCount(),
                    h[3].getTotalCount());
                System.out.print(d.counters().describe().lines().filter(l -> l.contains("sequence gaps"))
                    .reduce("", (a, b) -> a + "  direct: " + b + "\n"));
                System.out.print(r.counters().describe().lines().filter(l -> l.contains("jetstream published")
                    || l.contains("publish retries")).reduce("", (a, b) -> a + "  relay: " + b + "\n"));
                System.out.print(c.counters().describe().lines().filter(l -> l.contains("jetstream applied")
                    || l.contains("jetstream lost")).reduce("", (a, b) -> a + "  consumer: " + b + "\n"));
            }
        } finally {
            nats.close();
            io.kvidx.bench.KvidxStore.deleteTree(dir);
        }
    }

    private static DaemonContext context(final Path dir, final String cell) {
        return new DaemonContext().dir(dir).cell(cell).capacityBlocks(1L << 21).podTimeoutMs(0)
            .idleStrategy("yielding").deleteOnClose(true);
    }

    private static IndexReader reader(final Path dir, final String cell) {
        return IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell));
    }

    private static void print(final String what, final Histogram h) {
        System.out.printf("%s p50 %8.1f us  p90 %8.1f us  p99 %8.1f us  max %8.1f us (%d samples)%n", what,
            h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(90) / 1e3, h.getValueAtPercentile(99) / 1e3,
            h.getMaxValue() / 1e3, h.getTotalCount());
    }

    private static boolean visible(final IndexReader reader, final long key, final long[] bits) {
        try {
            return reader.lookup(key, bits);
        } catch (final IndexBusyException ex) {
            return false;
        }
    }

    /**
     * Paced batches; after each, polls (yielding) until its last block is visible in both indexes or 2 s passed.
     *
     * @return direct latencies, stream latencies, direct misses (count only), stream misses (count only).
     */
    private static Histogram[] run(final ZMQ.Socket pub, final String topic, final String model, final int rate,
        final int seconds, final int blocks, final IndexReader direct, final IndexReader stream) {
        final SplittableRandom random = new SplittableRandom(11);
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final long chainSeed = RouterKeyHasher.chainSeed(model, null, null);
        final long[] hashes = new long[blocks];
        final int[] tokens = new int[blocks * 16];
        final long[] keys = new long[blocks];
        final long[] bits = new long[4];
        final Histogram[] h = {new Histogram(10_000_000_000L, 3), new Histogram(10_000_000_000L, 3),
            new Histogram(10_000_000_000L, 3), new Histogram(10_000_000_000L, 3)};
        final long interval = 1_000_000_000L / rate;
        final int warmup = Math.min(rate * 2, 2000);
        final int total = warmup + rate * seconds;
        long seq = 0;
        long next = System.nanoTime();
        for (int i = 0; i < total; i++) {
            final byte[] payload = VllmBatches.stored(random, blocks, 16, hashes, tokens);
            hasher.keys(chainSeed, tokens, tokens.length, keys);
            while (System.nanoTime() < next) {
                LockSupport.parkNanos(Math.min(next - System.nanoTime(), 200_000));
            }
            final long sent = System.nanoTime();
            pub.sendMore(topic);
            pub.sendMore(ByteBuffer.allocate(8).putLong(seq++).array());
            pub.send(payload, 0);
            long directAt = -1;
            long streamAt = -1;
            while ((directAt < 0 || streamAt < 0) && System.nanoTime() - sent < TIMEOUT_NS) {
                if (directAt < 0 && visible(direct, keys[blocks - 1], bits)) {
                    directAt = System.nanoTime();
                }
                if (streamAt < 0 && visible(stream, keys[blocks - 1], bits)) {
                    streamAt = System.nanoTime();
                }
                Thread.yield();
            }
            if (i == 0 && directAt < 0) {
                i = -1; // slow joiner: the subscriptions were not up yet; start over
                LockSupport.parkNanos(10_000_000);
                continue;
            }
            if (i >= warmup) {
                record(h[0], h[2], directAt, sent);
                record(h[1], h[3], streamAt, sent);
            }
            next = Math.max(next + interval, System.nanoTime());
        }
        return h;
    }

    private static void record(final Histogram latencies, final Histogram misses, final long at, final long sent) {
        if (at < 0) {
            misses.recordValue(1);
        } else {
            latencies.recordValue(at - sent);
        }
    }
}
