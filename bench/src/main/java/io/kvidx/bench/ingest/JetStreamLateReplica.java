package io.kvidx.bench.ingest;

import io.kvidx.bench.KvidxStore;
import io.kvidx.bench.trace.MarkerBatch;
import io.kvidx.bench.trace.TraceBench;
import io.kvidx.bench.trace.TraceFile;
import io.kvidx.bench.trace.TracePlan;
import io.kvidx.bench.trace.TraceRequest;
import io.kvidx.bench.trace.ZmqTransport;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.jetstream.SnapshotBucket;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.snapshot.SnapshotLoader;
import io.nats.client.Connection;
import io.nats.client.Nats;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A late replica at the Mooncake trace's size, in one run (issue 37): how long a daemon that starts after the whole
 * trace has been replayed takes to be exact, from the JetStream snapshot bucket and the stream (ADR 0024) beside the
 * {@code --peer} catch-up (ADR 0014), and the sustained block ops/s of one relay and two consuming daemons on the way.
 *
 * <p>It starts {@code nats-server -js} on a free loopback port, the trace bench's simulated engines
 * ({@link TracePlan} split over {@code pods} pods, vLLM msgpack batches on {@link ZmqTransport}'s JeroMQ PUB sockets,
 * as {@code kvidx bench trace} replays them), and in this process a relay subscribed to them and two consumers of the
 * stream: A, the reference (no snapshots, the HTTP API a {@code --peer} reads), and S, which stores a snapshot every
 * second. The first {@code 1 - tail} of the plan's requests go out as fast as the relay takes them (at most 20,000
 * batches ahead of it); the time until each daemon has applied every block of them gives the sustained block ops/s
 * (stored + removed blocks / time). Once S has stored a snapshot covering all of them S stops, and the tail goes
 * out: the stream then holds messages no snapshot covers. Then, one at a time, each started in a new cell after
 * everything is applied:
 * <ul>
 *   <li>B, a consumer: loads the newest snapshot from the bucket, replays the stream after it;</li>
 *   <li>a consumer with {@code --peer} A: loads A's {@code /dump}, then consumes the stream from A's sequence;</li>
 *   <li>a consumer of an empty bucket: replays the whole stream from its start (what B costs without snapshots);</li>
 *   <li>a daemon without JetStream subscribed to the engines with their replay sockets ({@link ZmqTransport} made
 *   with replay: each socket keeps its last {@value ZmqTransport#REPLAY_BUFFER} batches, as vLLM does): a live
 *   batch per socket makes it replay each from 0.</li>
 * </ul>
 * Each is timed from its {@code KvidxDaemon.start} until its index is exact: every request's router-key chain of
 * the plan gives the same depth per pod id (a contiguous-prefix query, {@link IndexReader#queryExact}) as in A.
 * Not a test: figures for docs/jetstream.md.
 *
 * <p>{@code java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
 * -cp bench/target/kvidx-bench.jar io.kvidx.bench.ingest.JetStreamLateReplica [requests] [pods] [tail]}
 * (defaults: the trace bench's {@code --quick} size, {@value TraceBench#QUICK_REQUESTS} requests; 128 pods; a tail
 * of 0.1; 0 requests: the whole committed trace). nats-server from the Debian package must be installed.
 */
public final class JetStreamLateReplica {
    /** Every wait's bound. */
    private static final long WAIT_MS = 180_000;
    /** Most batches sent ahead of what the relay's writers were offered. */
    private static final long IN_FLIGHT = 20_000;
    /** PUB sockets the pods are spread over (the trace bench's default). */
    private static final int SOCKETS = TraceBench.SOCKETS_DEFAULT;
    private static final String BUCKET = "KVIDX_SNAPSHOTS";
    private static final String STREAM = "KVIDX_EVENTS";

    private JetStreamLateReplica() {
    }

    /** Blocks a daemon applied: stored (new or again) and removed (held or not). */
    private record Blocks(long stored, long removed) {
        static Blocks of(final KvidxDaemon d) {
            return new Blocks(d.counters().value(CounterType.BLOCKS_STORED)
                + d.counters().value(CounterType.DUPLICATE_BLOCKS), d.counters().value(CounterType.BLOCKS_REMOVED)
                + d.counters().value(CounterType.UNKNOWN_REMOVALS));
        }

        Blocks minus(final Blocks before) {
            return new Blocks(stored - before.stored, removed - before.removed);
        }

        boolean covers(final long wantStored, final long wantRemoved) {
            return stored >= wantStored && removed >= wantRemoved;
        }
    }

    /**
     * One late daemon's catch-up.
     *
     * @param what      how it caught up.
     * @param startedMs from calling start until start returned (connecting, fetching and loading a snapshot).
     * @param exactMs   from calling start until its index was exact.
     * @param applied   stream messages it applied by then (batches received, for the engines' replay).
     * @param loaded    what it loaded, or null.
     * @param stillExact whether it was still exact half a second later.
     */
    private record Late(String what, long startedMs, long exactMs, long applied, SnapshotLoader.Loaded loaded,
        boolean stillExact) {
    }

    /**
     * @param args [requests ({@value TraceBench#QUICK_REQUESTS}; 0: the whole trace)] [pods (128)] [tail (0.1)].
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception {
        final int requests = args.length > 0 ? Integer.parseInt(args[0]) : TraceBench.QUICK_REQUESTS;
        final int pods = args.length > 1 ? Integer.parseInt(args[1]) : TraceBench.PODS_DEFAULT;
        final double tail = args.length > 2 ? Double.parseDouble(args[2]) : 0.1;
        if (pods < 1 || pods > TraceBench.PODS_MAX || tail < 0 || tail >= 1 || requests < 0) {
            throw new IllegalArgumentException("usage: [requests >= 0] [pods 1.." + TraceBench.PODS_MAX
                + "] [tail in 0..1)");
        }
        List<TraceRequest> trace = TraceFile.loadDefault();
        if (requests > 0 && requests < trace.size()) {
            trace = trace.subList(0, requests);
        }
        final int blockSize = TraceBench.BLOCK_SIZE_DEFAULT;
        final TracePlan plan = TracePlan.vllm(trace, pods, blockSize, TraceBench.BUDGET_DEFAULT,
            TraceBench.SEED_DEFAULT);
        final int cut = (int) Math.round(plan.requests() * (1 - tail));
        final long[] head = totals(plan, 0, cut);
        final long[] all = totals(plan, 0, plan.requests());
        System.out.printf("JetStreamLateReplica: mooncake-conversation (committed), %,d requests over %d pods "
                + "(%d PUB sockets), block %d tokens, budget %,d blocks/pod: %,d batches, %,d blocks stored, %,d "
                + "removed, %.1f MB; first %,d requests before the last snapshot, %,d after; %d CPUs, load %s%n",
            plan.requests(), pods, SOCKETS, blockSize, TraceBench.BUDGET_DEFAULT, all[2], plan.blocksStored(),
            plan.blocksRemoved(), plan.payloadBytes() / 1e6, cut, plan.requests() - cut,
            Runtime.getRuntime().availableProcessors(), loadAverage());
        final Path dir = Path.of("/dev/shm/kvidx-bench-late-" + ProcessHandle.current().pid());
        final NatsProcess nats = NatsProcess.start(Path.of("/dev/shm"), "kvidx-bench-late-nats");
        final long capacity = Math.max(1L << 20, 4L * (plan.blocksStored() + pods) / 3);
        Connection nc = null;
        try (ZmqTransport engines = new ZmqTransport(Math.min(SOCKETS, pods), true)) {
            final String url = nats.url();
            nc = Nats.connect(url);
            final Connection bench = nc;
            final DaemonContext relayContext = context(dir, "relay", capacity, blockSize);
            for (final String endpoint : engines.endpoints()) {
                relayContext.zmq().addEndpoint(new ZmqEndpoint(endpoint, null, null, null));
            }
            relayContext.jetstream().url(url).role("relay");
            final DaemonContext aContext = context(dir, "a", capacity, blockSize);
            aContext.jetstream().url(url).role("consumer").snapshotIntervalMs(0);
            aContext.serving().http("127.0.0.1:0");
            final DaemonContext sContext = context(dir, "s", capacity, blockSize);
            sContext.jetstream().url(url).role("consumer").snapshotIntervalMs(1_000);
            try (KvidxDaemon relay = KvidxDaemon.start(relayContext);
                KvidxDaemon a = KvidxDaemon.start(aContext);
                IndexReader relayIndex = reader(dir, "relay");
                IndexReader aIndex = reader(dir, "a")) {
                final KvidxDaemon s = KvidxDaemon.start(sContext);
                final List<Late> late = new ArrayList<>();
                try (IndexReader sIndex = reader(dir, "s")) {
                    // Every socket's subscription up, on every daemon, before anything is timed.
                    for (int socket = 0; socket < Math.min(SOCKETS, pods); socket++) {
                        final MarkerBatch marker = MarkerBatch.vllm(100 + socket, blockSize, socket);
                        awaitMarker(engines, socket, marker, relayIndex, aIndex, sIndex);
                    }
                    final Blocks relay0 = Blocks.of(relay);
                    final Blocks a0 = Blocks.of(a);
                    final Blocks s0 = Blocks.of(s);
                    final long received0 = relay.counters().value(CounterType.MESSAGES_RECEIVED);
                    final long published0 = relay.counters().value(CounterType.JETSTREAM_PUBLISHED);
                    final long t0 = System.nanoTime();
                    send(plan, 0, cut, engines, () -> relay.counters().value(CounterType.MESSAGES_RECEIVED)
                        - received0);
                    final long sentNs = System.nanoTime() - t0;
                    final long[] done = sustained(t0, relay, a, s, relay0, a0, s0, published0, head);
                    final long relayNs = done[0];
                    final long aNs = done[1];
                    final long sNs = done[2];
                    final long ops = head[0] + head[1];
                    System.out.printf("sustained, %,d block ops (%,d stored + %,d removed in %,d batches), sent in "
                            + "%.2f s:%n", ops, head[0], head[1], head[2], sentNs / 1e9);
                    System.out.printf("  relay (ZeroMQ -> its index + JetStream acknowledged) %6.2f s  %,10.0f "
                        + "block ops/s%n", relayNs / 1e9, ops / (relayNs / 1e9));
                    System.out.printf("  consumer A (stream -> index)                         %6.2f s  %,10.0f "
                        + "block ops/s%n", aNs / 1e9, ops / (aNs / 1e9));
                    System.out.printf("  consumer S (stream -> index, snapshots every 1 s)    %6.2f s  %,10.0f "
                        + "block ops/s%n", sNs / 1e9, ops / (sNs / 1e9));
                    final long headSequence = streamLastSequence(bench);
                    await("S stored a snapshot covering the head", System.nanoTime(), () -> {
                        final SnapshotBucket.Entry e = newestSnapshot(bench);
                        return e != null && e.sequence() >= headSequence;
                    });
                } finally {
                    s.close();
                }
                final Blocks relay1 = Blocks.of(relay);
                final Blocks a1 = Blocks.of(a);
                send(plan, cut, plan.requests(), engines, () -> Long.MAX_VALUE / 2);
                final long[] rest = totals(plan, cut, plan.requests());
                await("the relay applied the tail", System.nanoTime(), () -> Blocks.of(relay).minus(relay1)
                    .covers(rest[0], rest[1]));
                await("A applied the tail", System.nanoTime(), () -> Blocks.of(a).minus(a1).covers(rest[0], rest[1])
                    && a.counters().value(CounterType.JETSTREAM_LAG) == 0);
                final SnapshotBucket.Entry newest = newestSnapshot(bench);
                final long streamLast = streamLastSequence(bench);
                final String[] answers = answers(plan, aIndex);
                System.out.printf("index: %,d entries, file %,d bytes (%s); stream: %,d messages, newest snapshot "
                        + "%,d bytes covering %,d of them%n", aIndex.entryCount(), Files.size(aIndex.path()),
                    cacheLine(aIndex), streamLast, newest.size(), newest.sequence());
                late.add(late("B: newest snapshot + stream", dir, "b", capacity, blockSize, url, null, plan,
                    answers));
                late.add(late("--peer A, then the stream from A's sequence", dir, "peer", capacity, blockSize, url,
                    "http://127.0.0.1:" + a.httpPort(), plan, answers));
                late.add(late("the whole stream, no snapshot (empty bucket)", dir, "replay", capacity, blockSize,
                    url, "bucket:KVIDX_EMPTY", plan, answers));
                late.add(lateDirect(dir, capacity, blockSize, engines, plan, answers));
                System.out.println("late daemon, started after the whole trace was applied, time from start to exact"
                    + " (every request's chain gives A's depth per pod):");
                for (final Late l : late) {
                    System.out.printf("  %-46s start %6d ms  exact %6d ms  %,7d messages applied%s%s%n",
                        l.what(), l.startedMs(), l.exactMs(), l.applied(), l.loaded() == null ? ""
                            : String.format("  loaded %,d bytes (%,d blocks of %d pods) in %d ms", l.loaded().bytes(),
                            l.loaded().blocks(), l.loaded().pods(), l.loaded().millis()),
                        l.stillExact() ? "" : "  NOT exact 0.5 s later");
                }
                System.out.printf("relay: %,d published, %,d publish retries; A: %,d applied, %,d lost; load %s%n",
                    relay.counters().value(CounterType.JETSTREAM_PUBLISHED),
                    relay.counters().value(CounterType.JETSTREAM_PUBLISH_RETRIES),
                    a.counters().value(CounterType.JETSTREAM_APPLIED), a.counters().value(CounterType.JETSTREAM_LOST),
                    loadAverage());
            }
        } finally {
            if (nc != null) {
                nc.close();
            }
            nats.close();
            KvidxStore.deleteTree(dir);
        }
    }

    /**
     * Polls (every 2 ms) until the relay, A and S have applied every block of the head; the relay's time is when its
     * index had them all and JetStream had acknowledged as many messages as it had when A had applied the last.
     *
     * @return nanoseconds from {@code t0}: the relay's, A's, S's.
     */
    private static long[] sustained(final long t0, final KvidxDaemon relay, final KvidxDaemon a, final KvidxDaemon s,
        final Blocks relay0, final Blocks a0, final Blocks s0, final long published0, final long[] head)
        throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        final List<long[]> published = new ArrayList<>();
        long relayIndex = -1;
        long aDone = -1;
        long sDone = -1;
        long publishedAtA = -1;
        while (aDone < 0 || sDone < 0 || relayIndex < 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the head was not applied within " + WAIT_MS + " ms: relay "
                    + Blocks.of(relay).minus(relay0) + ", A " + Blocks.of(a).minus(a0) + ", S "
                    + Blocks.of(s).minus(s0) + " of " + head[0] + " stored, " + head[1] + " removed");
            }
            final long p = relay.counters().value(CounterType.JETSTREAM_PUBLISHED) - published0;
            final long now = System.nanoTime() - t0;
            published.add(new long[] {now, p});
            if (relayIndex < 0 && Blocks.of(relay).minus(relay0).covers(head[0], head[1])) {
                relayIndex = now;
            }
            if (aDone < 0 && Blocks.of(a).minus(a0).covers(head[0], head[1])) {
                aDone = now;
                publishedAtA = p;
            }
            if (sDone < 0 && Blocks.of(s).minus(s0).covers(head[0], head[1])) {
                sDone = now;
            }
            Thread.sleep(2);
        }
        long relayDone = relayIndex;
        for (final long[] sample : published) {
            if (sample[1] >= publishedAtA) {
                relayDone = Math.max(relayIndex, sample[0]);
                break;
            }
        }
        return new long[] {relayDone, aDone, sDone};
    }

    /**
     * Starts a late consumer in a new cell and times it until its index is exact.
     *
     * @param source null: the snapshot bucket; {@code bucket:NAME}: another (empty) bucket; else a peer's URL.
     */
    private static Late late(final String what, final Path dir, final String cell, final long capacity,
        final int blockSize, final String url, final String source, final TracePlan plan, final String[] answers)
        throws InterruptedException {
        final DaemonContext c = context(dir, cell, capacity, blockSize);
        c.jetstream().url(url).role("consumer").snapshotIntervalMs(0);
        if (source != null && source.startsWith("bucket:")) {
            c.jetstream().bucket(source.substring(7));
        } else if (source != null) {
            c.snapshots().peer(source);
        }
        final long t0 = System.nanoTime();
        try (KvidxDaemon d = KvidxDaemon.start(c)) {
            final long startedNs = System.nanoTime() - t0;
            try (IndexReader r = reader(dir, cell)) {
                final long exactNs = await(what + " exact", t0, () -> exact(plan, r, answers));
                final long applied = d.counters().value(CounterType.JETSTREAM_APPLIED);
                Thread.sleep(500);
                return new Late(what, startedNs / 1_000_000, exactNs / 1_000_000, applied, d.catchUp(),
                    exact(plan, r, answers));
            }
        }
    }

    /**
     * Starts a daemon with no JetStream, subscribed to the engines with their replay sockets, and times it until its
     * index is exact: the first live batch of each socket (a marker, sent every 100 ms until the daemon shows it)
     * makes it replay the socket from 0, from the engine's buffer of its last {@value ZmqTransport#REPLAY_BUFFER}
     * batches.
     */
    private static Late lateDirect(final Path dir, final long capacity, final int blockSize,
        final ZmqTransport engines, final TracePlan plan, final String[] answers) throws InterruptedException {
        final DaemonContext c = context(dir, "direct", capacity, blockSize);
        final List<String> endpoints = engines.endpoints();
        final List<String> replays = engines.replayEndpoints();
        for (int e = 0; e < endpoints.size(); e++) {
            c.zmq().addEndpoint(new ZmqEndpoint(endpoints.get(e), null, null, replays.get(e)));
        }
        final long t0 = System.nanoTime();
        try (KvidxDaemon d = KvidxDaemon.start(c)) {
            final long startedNs = System.nanoTime() - t0;
            try (IndexReader r = reader(dir, "direct")) {
                for (int socket = 0; socket < endpoints.size(); socket++) {
                    awaitMarker(engines, socket, MarkerBatch.vllm(200 + socket, blockSize, socket), r);
                }
                final long exactNs = await("the engines' replay exact", t0, () -> exact(plan, r, answers));
                final long received = d.counters().value(CounterType.MESSAGES_RECEIVED);
                Thread.sleep(500);
                return new Late("the engines' replay sockets (no JetStream)", startedNs / 1_000_000,
                    exactNs / 1_000_000, received, null, exact(plan, r, answers));
            }
        }
    }

    /** @return per request, its chain's depth per pod id in the index, sorted ("pod-3:12 pod-9:4"). */
    private static String[] answers(final TracePlan plan, final IndexReader index) {
        final String[] answers = new String[plan.requests()];
        final String[] podIds = podIds(index);
        final PrefixResult result = new PrefixResult();
        for (int i = 0; i < answers.length; i++) {
            answers[i] = answer(index, plan.routerKeys(i), result, podIds);
        }
        return answers;
    }

    private static boolean exact(final TracePlan plan, final IndexReader index, final String[] answers) {
        try {
            final String[] podIds = podIds(index);
            final PrefixResult result = new PrefixResult();
            for (int i = 0; i < answers.length; i++) {
                if (!answers[i].equals(answer(index, plan.routerKeys(i), result, podIds))) {
                    return false;
                }
            }
            return true;
        } catch (final RuntimeException ex) {
            return false; // a shard busy, or the pod table changing under the pass: look again
        }
    }

    private static String answer(final IndexReader index, final long[] chain, final PrefixResult result,
        final String[] podIds) {
        index.queryExact(chain, Math.min(chain.length, index.maxChainLength()), null, result);
        final String[] parts = new String[result.count()];
        for (int k = 0; k < parts.length; k++) {
            parts[k] = podIds[result.slot(k)] + ":" + result.depth(k);
        }
        Arrays.sort(parts);
        return String.join(" ", parts);
    }

    private static String[] podIds(final IndexReader index) {
        final String[] ids = new String[index.maxPods()];
        for (int slot = 0; slot < ids.length; slot++) {
            ids[slot] = index.isAlive(slot) ? index.pod(slot).podId() : "dead-" + slot;
        }
        return ids;
    }

    /** @return blocks stored, blocks removed and batches of requests [from, to) of the plan. */
    private static long[] totals(final TracePlan plan, final int from, final int to) {
        final TracePlan.Counts counts = plan.counts(from, to);
        return new long[] {counts.stored(), counts.removed(), counts.batches()};
    }

    /** Sends requests [from, to), keeping at most {@link #IN_FLIGHT} batches ahead of the relay's writers. */
    private static void send(final TracePlan plan, final int from, final int to, final ZmqTransport engines,
        final java.util.function.LongSupplier offered) throws InterruptedException {
        long sent = 0;
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        for (int i = from; i < to; i++) {
            final byte[] payload = plan.payload(i);
            if (payload == null) {
                continue;
            }
            while (sent - offered.getAsLong() >= IN_FLIGHT) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the relay took no batch for " + WAIT_MS + " ms");
                }
                Thread.sleep(1);
            }
            engines.send(plan.pod(i), payload);
            sent++;
        }
    }

    private static void awaitMarker(final ZmqTransport engines, final int pod, final MarkerBatch marker,
        final IndexReader... indexes) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        final long[] bits = new long[4];
        while (System.nanoTime() < deadline) {
            engines.send(pod, marker.payload());
            Thread.sleep(100);
            boolean all = true;
            for (final IndexReader index : indexes) {
                try {
                    all &= index.lookup(marker.routerKey(), bits);
                } catch (final RuntimeException ex) {
                    all = false;
                }
            }
            if (all) {
                return;
            }
        }
        throw new IllegalStateException("pod " + pod + "'s marker did not reach every index in " + WAIT_MS + " ms");
    }

    /**
     * Polls every 5 ms until the condition holds.
     *
     * @return nanoseconds from {@code t0} until it held.
     */
    private static long await(final String what, final long t0, final BooleanSupplier done)
        throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(what + ": not within " + WAIT_MS + " ms");
            }
            Thread.sleep(5);
        }
        return System.nanoTime() - t0;
    }

    private static SnapshotBucket.Entry newestSnapshot(final Connection nc) {
        try {
            final List<SnapshotBucket.Entry> entries = new SnapshotBucket(nc.objectStore(BUCKET)).list();
            return entries.isEmpty() ? null : entries.get(0);
        } catch (final IOException | RuntimeException ex) {
            return null; // not there yet
        }
    }

    private static long streamLastSequence(final Connection nc) throws Exception {
        return nc.jetStreamManagement().getStreamInfo(STREAM).getStreamState().getLastSequence();
    }

    /** @return the index file against the last-level cache, where the VM exposes its size. */
    private static String cacheLine(final IndexReader index) throws IOException {
        final Path l3 = Path.of("/sys/devices/system/cpu/cpu0/cache/index3/size");
        if (!Files.isReadable(l3)) {
            return "this VM does not expose its cache sizes (no " + l3.getParent() + ")";
        }
        final String size = Files.readString(l3).strip();
        final long bytes = Long.parseLong(size.replaceAll("[^0-9]", "")) << (size.endsWith("K") ? 10
            : size.endsWith("M") ? 20 : 0);
        return (Files.size(index.path()) <= bytes ? "fits in" : "exceeds") + " the " + size + " L3 cache";
    }

    private static String loadAverage() {
        try {
            final String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (final IOException ex) {
            return "unknown";
        }
    }

    private static DaemonContext context(final Path dir, final String cell, final long capacity,
        final int blockSize) {
        return new DaemonContext().dir(dir).cell(cell).blockSize(blockSize).capacityBlocks(capacity).podTimeoutMs(0)
            .idleStrategy("backoff").deleteOnClose(true);
    }

    private static IndexReader reader(final Path dir, final String cell) {
        return IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell));
    }
}
