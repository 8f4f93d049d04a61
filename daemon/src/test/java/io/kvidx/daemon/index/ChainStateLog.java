package io.kvidx.daemon.index;

import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * What {@link ChangingKeysWriterMain} has written to the index, for a reader in another process to judge its
 * answers: a mapped file holding a global operation counter and, per chain, a ring of the chain's states (which pod
 * slots hold which of its blocks, and whether each slot is alive) tagged with the operation that produced them.
 *
 * <pre>
 *   0  magic u64 | chains i32 | ring i32 | holders i32 | chain length i32 | (pad)
 *  32  op sequence u64: 2k+1 while operation k runs, 2k+2 once it ended and its states are published
 *  40  writer done u64 (1 at the end)
 *  64  per chain (64 bytes each): latest state number u64
 *  ... per chain, a ring of states: [stamp u64 = 2j+2 once state j is written (2j+1 while it is),
 *      op u64 (the operation that produced it, -1 for the initial empty state), count u64,
 *      holders x (slot i32, alive i32, block mask u64)]
 * </pre>
 *
 * <p>Protocol. The writer, for operation k: stores 2k+1 into the op sequence (volatile), changes the index, then for
 * every chain the operation changed appends state j (stamp 2j+1, payload, stamp 2j+2 with release, then latest = j
 * with release), then stores 2k+2 (volatile). A store also appends the state it intended (the blocks added) before
 * the state it left (evictions and refused holders removed), since a block can be added and then evicted inside one
 * operation. A reader reads the op sequence before (G1) and after (G2) a query: the operations that overlapped it are
 * G1/2 .. (G2-1)/2; once the op sequence has passed the last of them, the legal states are the chain's state
 * current before the first and every state those operations produced.
 *
 * <p><b>Note:</b> one writer process; any number of reader processes.
 */
final class ChainStateLog implements AutoCloseable {
    static final long MAGIC = 0x474f_4c53_4e49_4843L;
    static final int HEADER = 64;
    static final int CHAIN_HEADER = 64;
    private static final VarHandle LONG = Layouts.LONG;

    final int chains;
    final int ring;
    final int holders;
    final int chainLength;
    private final MappedRegion region;
    private final MemorySegment s;
    private final long entryLength;
    private final long ringsOffset;

    private ChainStateLog(final MappedRegion region, final int chains, final int ring, final int holders,
        final int chainLength) {
        this.region = region;
        this.s = region.segment();
        this.chains = chains;
        this.ring = ring;
        this.holders = holders;
        this.chainLength = chainLength;
        this.entryLength = 24 + 16L * holders;
        this.ringsOffset = HEADER + (long) CHAIN_HEADER * chains;
    }

    private static long length(final int chains, final int ring, final int holders) {
        return HEADER + (long) CHAIN_HEADER * chains + (long) chains * ring * (24 + 16L * holders);
    }

    static ChainStateLog create(final Path file, final int chains, final int ring, final int holders,
        final int chainLength) {
        final MappedRegion region;
        try {
            region = MappedRegion.createPrivate(file, length(chains, ring, holders));
        } catch (final java.io.IOException ex) {
            throw new java.io.UncheckedIOException(ex);
        }
        final ChainStateLog log = new ChainStateLog(region, chains, ring, holders, chainLength);
        log.s.set(java.lang.foreign.ValueLayout.JAVA_INT, 8, chains);
        log.s.set(java.lang.foreign.ValueLayout.JAVA_INT, 12, ring);
        log.s.set(java.lang.foreign.ValueLayout.JAVA_INT, 16, holders);
        log.s.set(java.lang.foreign.ValueLayout.JAVA_INT, 20, chainLength);
        for (int c = 0; c < chains; c++) {
            // State 0 of every chain: nothing held, before any operation.
            log.writeEntry(c, 0, -1, new int[0], new boolean[0], new long[0], 0);
        }
        LONG.setRelease(log.s, 0L, MAGIC);
        return log;
    }

    static ChainStateLog open(final Path file) throws IOException {
        final MappedRegion header = MappedRegion.mapReadOnly(file, HEADER);
        final MemorySegment h = header.segment();
        if ((long) LONG.getAcquire(h, 0L) != MAGIC) {
            header.close();
            throw new IOException("no chain state log in " + file);
        }
        final int chains = h.get(java.lang.foreign.ValueLayout.JAVA_INT, 8);
        final int ring = h.get(java.lang.foreign.ValueLayout.JAVA_INT, 12);
        final int holders = h.get(java.lang.foreign.ValueLayout.JAVA_INT, 16);
        final int chainLength = h.get(java.lang.foreign.ValueLayout.JAVA_INT, 20);
        header.close();
        return new ChainStateLog(MappedRegion.mapReadOnly(file, length(chains, ring, holders)), chains, ring, holders,
            chainLength);
    }

    // ---- writer ----

    void beginOp(final long op) {
        LONG.setVolatile(s, 32L, 2 * op + 1);
    }

    void endOp(final long op) {
        LONG.setVolatile(s, 32L, 2 * op + 2);
    }

    void done() {
        LONG.setVolatile(s, 40L, 1L);
    }

    /** Appends a state of a chain produced by operation {@code op}. */
    void append(final int chain, final long op, final int[] slots, final boolean[] alive, final long[] masks,
        final int count) {
        if (count > holders) {
            throw new IllegalStateException("chain " + chain + " has " + count + " holders, the log keeps " + holders);
        }
        final long next = latest(chain) + 1;
        writeEntry(chain, next, op, slots, alive, masks, count);
    }

    private void writeEntry(final int chain, final long j, final long op, final int[] slots, final boolean[] alive,
        final long[] masks, final int count) {
        final long e = entry(chain, j);
        LONG.setVolatile(s, e, 2 * j + 1);
        s.set(java.lang.foreign.ValueLayout.JAVA_LONG, e + 8, op);
        s.set(java.lang.foreign.ValueLayout.JAVA_LONG, e + 16, count);
        for (int i = 0; i < count; i++) {
            final long h = e + 24 + 16L * i;
            s.set(java.lang.foreign.ValueLayout.JAVA_INT, h, slots[i]);
            s.set(java.lang.foreign.ValueLayout.JAVA_INT, h + 4, alive[i] ? 1 : 0);
            s.set(java.lang.foreign.ValueLayout.JAVA_LONG, h + 8, masks[i]);
        }
        LONG.setRelease(s, e, 2 * j + 2);
        LONG.setRelease(s, HEADER + (long) CHAIN_HEADER * chain, j);
    }

    private long entry(final int chain, final long j) {
        return ringsOffset + ((long) chain * ring + (j % ring)) * entryLength;
    }

    // ---- reader ----

    long opSequence() {
        return (long) LONG.getAcquire(s, 32L);
    }

    boolean writerDone() {
        return (long) LONG.getAcquire(s, 40L) != 0;
    }

    long latest(final int chain) {
        return (long) LONG.getAcquire(s, HEADER + (long) CHAIN_HEADER * chain);
    }

    /** A chain state as read from the ring. */
    record State(long number, long op, int[] slots, boolean[] alive, long[] masks) {
        long mask(final int slot) {
            for (int i = 0; i < slots.length; i++) {
                if (slots[i] == slot) {
                    return masks[i];
                }
            }
            return 0;
        }

        /** 1 alive, 0 dead, -1 not listed (holds nothing of the chain; its liveness is not recorded). */
        int alive(final int slot) {
            for (int i = 0; i < slots.length; i++) {
                if (slots[i] == slot) {
                    return alive[i] ? 1 : 0;
                }
            }
            return -1;
        }
    }

    /**
     * Reads state {@code j} of a chain.
     *
     * @return the state, or null when the ring slot no longer (or not yet) holds it.
     */
    State read(final int chain, final long j) {
        final long e = entry(chain, j);
        final long stamp = (long) LONG.getAcquire(s, e);
        if (stamp != 2 * j + 2) {
            return null;
        }
        final long op = s.get(java.lang.foreign.ValueLayout.JAVA_LONG, e + 8);
        final int count = (int) Math.min(holders, Math.max(0, s.get(java.lang.foreign.ValueLayout.JAVA_LONG, e + 16)));
        final int[] slots = new int[count];
        final boolean[] alive = new boolean[count];
        final long[] masks = new long[count];
        for (int i = 0; i < count; i++) {
            final long h = e + 24 + 16L * i;
            slots[i] = s.get(java.lang.foreign.ValueLayout.JAVA_INT, h);
            alive[i] = s.get(java.lang.foreign.ValueLayout.JAVA_INT, h + 4) != 0;
            masks[i] = s.get(java.lang.foreign.ValueLayout.JAVA_LONG, h + 8);
        }
        VarHandle.loadLoadFence();
        if ((long) LONG.getAcquire(s, e) != stamp) {
            return null;
        }
        return new State(j, op, slots, alive, masks);
    }

    @Override
    public void close() {
        region.close();
    }
}
