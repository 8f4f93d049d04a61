package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PodCapacityExceededException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.locks.LockSupport;

/**
 * The writer of {@link ChangingKeysCrossProcessTest}, in its own process: churns chains whose pod sets change
 * (stores, removes, evictions by a small table, overflow bitmaps and their demotion in a cell of more than 64 pods,
 * pods taken down, swept, and their slots given to new pods, pods cleared) and publishes every state of every chain
 * it changes in a {@link ChainStateLog}, bracketed by the operation counter, so that a reader process can tell which
 * answers are legal.
 *
 * <p>The states it publishes are the index's own (read back through an {@link IndexReader} on the same file between
 * operations, when nothing changes it); they are also checked against what each operation must have done (a
 * store adds exactly its blocks unless a shard evicted or refused, a removal removes exactly its blocks, a sweep or
 * a clear removes every bit of its pods, a new pod's slot holds nothing): a mismatch ends the process with status 3.
 *
 * <p>Arguments: index dir, cell, max pods, seconds, chain state log file, seed. Prints "READY" once the log exists,
 * runs for the seconds from the reader's attach (its marker file, {@link ChangingKeysReaderMain#attachedMarker}; at
 * most 60 s of waiting for it), then prints "DONE ..." with what happened.
 */
public final class ChangingKeysWriterMain {
    /** Longest wait for the reader to attach before the run starts anyway. */
    private static final long ATTACH_WAIT_NS = 60_000_000_000L;
    static final int CHAINS = 32;
    static final int LENGTH = 24;
    static final int RING = 64;
    static final int HOLDERS = 16;
    /** A chain gets a new holder only while fewer than this many slots hold any of it. */
    static final int MAX_LISTED = 12;
    static final int FILLER = 200;
    static final long CHAIN_BASE = 5_000;

    private final IndexWriter writer;
    private final IndexReader truth;
    private final ChainStateLog log;
    private final int maxPods;
    private final SplittableRandom random;
    private final long[][] chains = new long[CHAINS][];
    /** Per chain: slot to block mask, as last published. */
    private final List<TreeMap<Integer, Long>> published = new ArrayList<>();
    private final List<TreeMap<Integer, Boolean>> publishedAlive = new ArrayList<>();
    private final long[] filler = new long[FILLER];
    private final int[] fillerOwner = new int[FILLER];
    private final long[] words = new long[4];
    private long op;
    private int nextPod;
    private final long[] counts = new long[Kind.values().length];
    private long reuses;
    private long statesPublished;

    private enum Kind { EXTEND, TRIM, FILLER, DOWN, SWEEP, REGISTER, CLEAR, STORM }

    private ChangingKeysWriterMain(final IndexWriter writer, final IndexReader truth, final ChainStateLog log,
        final int maxPods, final long seed) {
        this.writer = writer;
        this.truth = truth;
        this.log = log;
        this.maxPods = maxPods;
        this.random = new SplittableRandom(seed);
        for (int c = 0; c < CHAINS; c++) {
            chains[c] = chainKeys(c);
            published.add(new TreeMap<>());
            publishedAlive.add(new TreeMap<>());
        }
        for (int i = 0; i < FILLER; i++) {
            filler[i] = random.nextLong() | 1;
            fillerOwner[i] = -1;
        }
    }

    static long[] chainKeys(final int chain) {
        return TestIndexes.chain(CHAIN_BASE + chain, LENGTH);
    }

    static IndexWriterContext context(final Path dir, final String cell, final int maxPods) {
        // Two small shards that fill up: long probe clusters, backward shifts on every delete, evictions.
        return new IndexWriterContext().dir(dir).cell(cell).shardCount(2).slotsPerShard(256).maxLoadFactor(0.9)
            .maxPods(maxPods).maxChainLength(64).deleteOnClose(true);
    }

    /**
     * @param args dir, cell, max pods, seconds, log file, seed.
     */
    public static void main(final String[] args) {
        final Path dir = Path.of(args[0]);
        final String cell = args[1];
        final int maxPods = Integer.parseInt(args[2]);
        final long seconds = Long.parseLong(args[3]);
        final Path attached = ChangingKeysReaderMain.attachedMarker(Path.of(args[4]));
        try (IndexWriter writer = IndexWriter.create(context(dir, cell, maxPods));
            IndexReader truth = IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell)
                .heartbeatTimeoutMs(0));
            ChainStateLog log = ChainStateLog.create(Path.of(args[4]), CHAINS, RING, HOLDERS, LENGTH)) {
            final ChangingKeysWriterMain main = new ChangingKeysWriterMain(writer, truth, log, maxPods,
                Long.parseLong(args[5]));
            main.run(seconds, attached);
        }
    }

    private void run(final long seconds, final Path attached) {
        for (int i = 0; i < maxPods; i++) {
            writer.registerPod("p-" + nextPod++, "m");
        }
        // A crowded start: every filler key held, every chain half held by a few pods.
        for (int i = 0; i < FILLER; i++) {
            operation(Kind.FILLER);
        }
        for (int i = 0; i < CHAINS * 4; i++) {
            operation(Kind.EXTEND);
        }
        System.out.println("READY");
        System.out.flush();
        long nextBeat = 0;
        // The run's seconds count from the reader's attach (it leaves a marker file): on a loaded host a reader JVM
        // can take longer to start than the whole run, and would find the index closed and deleted.
        final long attachBy = System.nanoTime() + ATTACH_WAIT_NS;
        while (!Files.exists(attached) && System.nanoTime() < attachBy) {
            final long now = System.currentTimeMillis();
            if (now >= nextBeat) {
                writer.heartbeat(now);
                nextBeat = now + 100;
            }
            LockSupport.parkNanos(10_000_000L);
        }
        final long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < deadline) {
            final long now = System.currentTimeMillis();
            if (now >= nextBeat) {
                writer.heartbeat(now);
                nextBeat = now + 100;
            }
            final double r = random.nextDouble();
            final Kind kind = r < 0.28 ? Kind.EXTEND : r < 0.48 ? Kind.TRIM : r < 0.62 ? Kind.FILLER
                : r < 0.65 ? Kind.DOWN : r < 0.71 ? Kind.SWEEP : r < 0.77 ? Kind.REGISTER : r < 0.80 ? Kind.CLEAR
                : Kind.STORM;
            operation(kind);
        }
        log.done();
        System.out.println("DONE ops=" + op + " extend=" + counts[0] + " trim=" + counts[1] + " filler=" + counts[2]
            + " down=" + counts[3] + " sweep=" + counts[4] + " register=" + counts[5] + " clear=" + counts[6]
            + " storm=" + counts[7]
            + " reuses=" + reuses + " states=" + statesPublished + " evictions=" + writer.evictions()
            + " innerEvictions=" + writer.innerEvictions() + " refused=" + writer.holdersRefused()
            + " demotions=" + writer.overflowDemotions());
    }

    private void operation(final Kind kind) {
        log.beginOp(op);
        final long evictions = writer.evictions();
        final long refused = writer.holdersRefused();
        boolean done = switch (kind) {
            case EXTEND -> extend();
            case TRIM -> trim();
            case FILLER -> filler();
            case DOWN -> down();
            case SWEEP -> sweep();
            case REGISTER -> register();
            case CLEAR -> clear();
            case STORM -> storm();
        };
        if (writer.evictions() != evictions || writer.holdersRefused() != refused) {
            // Any chain may have lost blocks or holders.
            for (int c = 0; c < CHAINS; c++) {
                publish(c);
            }
        }
        if (done) {
            counts[kind.ordinal()]++;
        }
        log.endOp(op);
        op++;
    }

    private int randomAlive() {
        for (int tries = 0; tries < 1000; tries++) {
            final int slot = random.nextInt(maxPods);
            if (writer.isAlive(slot)) {
                return slot;
            }
        }
        return -1;
    }

    private static int prefix(final long mask) {
        return Long.numberOfTrailingZeros(~mask);
    }

    private static long bits(final int from, final int to) {
        return to - from >= 64 ? -1L : ((1L << (to - from)) - 1) << from;
    }

    private boolean extend() {
        final int c = random.nextInt(CHAINS);
        final TreeMap<Integer, Long> holders = published.get(c);
        final List<Integer> alive = holders.keySet().stream().filter(writer::isAlive).toList();
        final int slot;
        if (!alive.isEmpty() && (holders.size() >= MAX_LISTED || random.nextInt(10) < 6)) {
            slot = alive.get(random.nextInt(alive.size()));
        } else if (holders.size() < MAX_LISTED) {
            slot = randomAlive();
        } else {
            return false;
        }
        if (slot < 0) {
            return false;
        }
        final long before = holders.getOrDefault(slot, 0L);
        final int d = prefix(before);
        final int from;
        final int to;
        if (d >= LENGTH) {
            from = random.nextInt(LENGTH);
            to = Math.min(LENGTH, from + 1 + random.nextInt(4));
        } else {
            from = d;
            to = Math.min(LENGTH, d + 1 + random.nextInt(6));
        }
        // The state the store intends (its blocks added), published before the index changes: a block it adds may
        // be evicted again before the operation ends.
        final TreeMap<Integer, Long> intended = new TreeMap<>(holders);
        intended.put(slot, before | bits(from, to));
        final TreeMap<Integer, Boolean> intendedAlive = new TreeMap<>(publishedAlive.get(c));
        intendedAlive.put(slot, true);
        append(c, intended, intendedAlive);
        published.set(c, intended);
        publishedAlive.set(c, intendedAlive);
        final long evictions = writer.evictions();
        final long refused = writer.holdersRefused();
        writer.store(slot, chains[c], from, to - from, from == 0 ? 0 : chains[c][from - 1]);
        publish(c);
        if (writer.evictions() == evictions && writer.holdersRefused() == refused
            && !published.get(c).equals(intended)) {
            fail("store of blocks [" + from + ", " + to + ") of chain " + c + " for slot " + slot + " left "
                + published.get(c) + ", expected " + intended);
        }
        return true;
    }

    private boolean trim() {
        final int c = random.nextInt(CHAINS);
        final TreeMap<Integer, Long> holders = published.get(c);
        if (holders.isEmpty()) {
            return false;
        }
        final List<Integer> slots = new ArrayList<>(holders.keySet());
        final int slot = slots.get(random.nextInt(slots.size()));
        final long before = holders.get(slot);
        final int top = 64 - Long.numberOfLeadingZeros(before);
        final int from = Math.max(0, top - 1 - random.nextInt(6));
        // Removed in a random order: the pod's blocks are not a prefix while the removal runs.
        final long[] keys = Arrays.copyOfRange(chains[c], from, top);
        for (int i = keys.length - 1; i > 0; i--) {
            final int j = random.nextInt(i + 1);
            final long t = keys[i];
            keys[i] = keys[j];
            keys[j] = t;
        }
        writer.remove(slot, keys, 0, keys.length);
        final TreeMap<Integer, Long> expected = new TreeMap<>(holders);
        final long after = before & ~bits(from, top);
        if (after == 0) {
            expected.remove(slot);
        } else {
            expected.put(slot, after);
        }
        publish(c);
        if (!published.get(c).equals(expected)) {
            fail("removal of blocks [" + from + ", " + top + ") of chain " + c + " for slot " + slot + " left "
                + published.get(c) + ", expected " + expected);
        }
        return true;
    }

    private boolean filler() {
        final int i = random.nextInt(FILLER);
        final long[] one = {filler[i]};
        if (fillerOwner[i] >= 0) {
            writer.remove(fillerOwner[i], one, 0, 1);
            fillerOwner[i] = -1;
        } else {
            final int slot = randomAlive();
            if (slot < 0) {
                return false;
            }
            writer.store(slot, one, 0, 1);
            fillerOwner[i] = slot;
        }
        return true;
    }

    /**
     * Many backward shifts in one operation that changes no chain: filler keys removed and stored again (the
     * shard's count comes back to where it was, so nothing is evicted). Entries of the chains that sit behind them
     * in their probe clusters move to and fro; every answer given meanwhile must be the state before.
     */
    private boolean storm() {
        final long[] one = new long[1];
        int moved = 0;
        for (int n = 0; n < 64; n++) {
            final int i = random.nextInt(FILLER);
            final int owner = fillerOwner[i];
            if (owner < 0 || !writer.isAlive(owner)) {
                continue;
            }
            one[0] = filler[i];
            writer.remove(owner, one, 0, 1);
            writer.store(owner, one, 0, 1);
            moved++;
        }
        return moved > 0;
    }

    private boolean down() {
        int alive = 0;
        for (int s = 0; s < maxPods; s++) {
            alive += writer.isAlive(s) ? 1 : 0;
        }
        if (alive <= maxPods / 2) {
            return false;
        }
        final int slot = randomAlive();
        writer.podDown(slot);
        for (int c = 0; c < CHAINS; c++) {
            if (published.get(c).containsKey(slot)) {
                final TreeMap<Integer, Long> before = new TreeMap<>(published.get(c));
                publish(c);
                if (!published.get(c).equals(before) || publishedAlive.get(c).get(slot)) {
                    fail("pod down of slot " + slot + " changed chain " + c + ": " + before + " -> "
                        + published.get(c));
                }
            }
        }
        return true;
    }

    private boolean sweep() {
        if (!writer.isSweeping()) {
            return false;
        }
        final List<Integer> draining = new ArrayList<>();
        for (int s = 0; s < maxPods; s++) {
            if (!writer.isAlive(s) && writer.podState(s) != io.kvidx.client.index.IndexDescriptor.POD_STATE_FREE) {
                draining.add(s);
            }
        }
        int steps = 0;
        while (writer.isSweeping()) {
            writer.sweepStep();
            if (++steps > 1_000) {
                fail("sweep does not end");
            }
        }
        for (int c = 0; c < CHAINS; c++) {
            publish(c);
            for (final int s : draining) {
                if (published.get(c).containsKey(s)) {
                    fail("slot " + s + " still holds blocks of chain " + c + " after its sweep");
                }
            }
        }
        for (int i = 0; i < FILLER; i++) {
            if (fillerOwner[i] >= 0 && draining.contains(fillerOwner[i])) {
                fillerOwner[i] = -1;
            }
        }
        return true;
    }

    private boolean register() {
        final int slot;
        try {
            slot = writer.registerPod("p-" + nextPod, "m");
        } catch (final PodCapacityExceededException ex) {
            return false;
        }
        nextPod++;
        if (writer.generation(slot) > 1) {
            reuses++;
        }
        for (int c = 0; c < CHAINS; c++) {
            publish(c);
            if (published.get(c).containsKey(slot)) {
                fail("slot " + slot + " given to a new pod still holds blocks of chain " + c);
            }
        }
        return true;
    }

    private boolean clear() {
        final int slot = randomAlive();
        if (slot < 0) {
            return false;
        }
        writer.clearPod(slot);
        for (int c = 0; c < CHAINS; c++) {
            publish(c);
            if (published.get(c).containsKey(slot)) {
                fail("slot " + slot + " still holds blocks of chain " + c + " after its clear");
            }
        }
        for (int i = 0; i < FILLER; i++) {
            if (fillerOwner[i] == slot) {
                fillerOwner[i] = -1;
            }
        }
        return true;
    }

    /** Reads the chain's state from the index and appends it to the log when it changed. */
    private void publish(final int c) {
        final TreeMap<Integer, Long> masks = new TreeMap<>();
        for (int i = 0; i < LENGTH; i++) {
            truth.lookup(chains[c][i], words);
            for (int w = 0; w < 4; w++) {
                long bits = words[w];
                while (bits != 0) {
                    final int slot = (w << 6) + Long.numberOfTrailingZeros(bits);
                    bits &= bits - 1;
                    masks.merge(slot, 1L << i, (a, b) -> a | b);
                }
            }
        }
        final TreeMap<Integer, Boolean> alive = new TreeMap<>();
        masks.keySet().forEach(s -> alive.put(s, writer.isAlive(s)));
        if (!masks.equals(published.get(c)) || !alive.equals(publishedAlive.get(c))) {
            append(c, masks, alive);
            published.set(c, masks);
            publishedAlive.set(c, alive);
        }
    }

    private void append(final int c, final TreeMap<Integer, Long> masks, final TreeMap<Integer, Boolean> alive) {
        final int n = masks.size();
        final int[] slots = new int[n];
        final boolean[] a = new boolean[n];
        final long[] m = new long[n];
        int i = 0;
        for (final var e : masks.entrySet()) {
            slots[i] = e.getKey();
            a[i] = alive.getOrDefault(e.getKey(), false);
            m[i] = e.getValue();
            i++;
        }
        log.append(c, op, slots, a, m, n);
        statesPublished++;
    }

    private static void fail(final String what) {
        System.out.println("MODEL " + what);
        System.out.flush();
        System.exit(3);
    }
}
