package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.PodCapacityExceededException;
import io.kvidx.client.index.Seqlock;
import io.kvidx.ffm.Layouts;
import org.agrona.collections.LongArrayList;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import static io.kvidx.client.index.IndexDescriptor.ALIVE_BITMAP_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.POD_STATE_ALIVE;
import static io.kvidx.client.index.IndexDescriptor.POD_STATE_DRAINING;
import static io.kvidx.client.index.IndexDescriptor.POD_STATE_FREE;

/**
 * The cell's pod slots: gives a pod a slot (the one it held before when that is free, so a pod keeps its slot
 * across restarts and returns), takes pods down (phase 1: the alive bit), sweeps their bits shard by shard
 * (phase 2, bounded per step) and frees their slots only when the sweep is complete, so a slot never hands one
 * pod's bits to another.
 *
 * <p>Publication: a pod table entry changes under its seqlock ({@link Seqlock}); after every change the pod table
 * version (header offset 160) is incremented with a volatile add, and a newly given slot's alive bit is set only
 * after that, so a reader that loads the alive bitmap and then the version sees a new version whenever a slot
 * changed hands.
 *
 * <p><b>Note:</b> thread safe (synchronized); registration and sweeps are cold. The pod's writer agent is the
 * only thread that stores or removes its blocks.
 */
final class PodTable {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle STATE = MethodHandles.arrayElementVarHandle(int[].class);

    private final MemorySegment segment;
    private final EntryTable entries;
    private final ShardSweep sweeper;
    private final String cell;
    private final int maxPods;
    private final int[] states;
    private final String[] podIds;
    private final int[] generations;
    private final Map<String, Integer> slotByPodId = new HashMap<>();
    /** Pods taken down since the current sweep pass began: swept by the next pass. */
    private final long[] sweepPending = new long[IndexDescriptor.POD_WORDS];
    private final long[] sweepCurrent = new long[IndexDescriptor.POD_WORDS];
    private final LongArrayList sweepParents = new LongArrayList();
    private int sweepShard = -1;

    PodTable(final MemorySegment segment, final EntryTable entries, final String cell, final int maxPods) {
        this.segment = segment;
        this.entries = entries;
        this.sweeper = new ShardSweep(entries);
        this.cell = cell;
        this.maxPods = maxPods;
        this.states = new int[maxPods];
        this.podIds = new String[maxPods];
        this.generations = new int[maxPods];
    }

    /**
     * Loads the pod table a previous writer left (after {@link IndexRepair} made it consistent): alive pods keep
     * their slots, draining pods are swept again from the first shard.
     */
    synchronized void load() {
        for (int slot = 0; slot < maxPods; slot++) {
            final long base = IndexDescriptor.podEntryOffset(slot);
            generations[slot] = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET);
            final int state = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET);
            podIds[slot] = readPodId(slot);
            STATE.setVolatile(states, slot, state);
            if (state == POD_STATE_ALIVE) {
                slotByPodId.put(podIds[slot], slot);
            } else if (state == POD_STATE_DRAINING) {
                sweepPending[slot >>> 6] |= 1L << slot;
            }
        }
    }

    private String readPodId(final int slot) {
        final long base = IndexDescriptor.podEntryOffset(slot);
        final int length = Math.clamp(segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_ID_LENGTH_OFFSET),
            0, IndexDescriptor.POD_ID_MAX_LENGTH);
        final byte[] id = new byte[length];
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_ID_OFFSET, id, 0, length);
        return new String(id, StandardCharsets.UTF_8);
    }

    /**
     * Registers a pod, or returns its slot when it is already alive (idempotent). A pod gets back the slot it held
     * last when that slot is free; otherwise the lowest free slot that never held a pod, else the lowest free one.
     */
    synchronized int register(final String podId, final String model) {
        final byte[] id = podId == null ? new byte[0] : podId.getBytes(StandardCharsets.UTF_8);
        final byte[] modelBytes = model == null ? new byte[0] : model.getBytes(StandardCharsets.UTF_8);
        if (id.length == 0 || id.length > IndexDescriptor.POD_ID_MAX_LENGTH) {
            throw new IllegalArgumentException("pod id must be 1.." + IndexDescriptor.POD_ID_MAX_LENGTH
                + " UTF-8 bytes: '" + podId + "'");
        }
        if (modelBytes.length > IndexDescriptor.POD_MODEL_MAX_LENGTH) {
            throw new IllegalArgumentException("model name must be at most " + IndexDescriptor.POD_MODEL_MAX_LENGTH
                + " UTF-8 bytes: '" + model + "'");
        }
        final Integer existing = slotByPodId.get(podId);
        if (existing != null) {
            return existing;
        }
        final int slot = chooseSlot(podId);
        if (slot < 0) {
            throw new PodCapacityExceededException("cannot register pod '" + podId + "': all " + maxPods
                + " pod slots of cell '" + cell + "' are alive or still being swept");
        }
        generations[slot]++;
        final long base = IndexDescriptor.podEntryOffset(slot);
        final long odd = Seqlock.beginWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET, generations[slot]);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET, POD_STATE_ALIVE);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_ID_LENGTH_OFFSET, id.length);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET, modelBytes.length);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET, 0);
        MemorySegment.copy(id, 0, segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_ID_OFFSET, id.length);
        MemorySegment.copy(modelBytes, 0, segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_MODEL_OFFSET,
            modelBytes.length);
        Seqlock.endWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET, odd);
        podIds[slot] = podId;
        slotByPodId.put(podId, slot);
        STATE.setVolatile(states, slot, POD_STATE_ALIVE);
        bumpVersion();
        LONG.getAndBitwiseOr(segment, aliveWordOffset(slot), 1L << slot);
        return slot;
    }

    private int chooseSlot(final String podId) {
        int neverUsed = -1;
        int anyFree = -1;
        for (int i = 0; i < maxPods; i++) {
            if ((int) STATE.getVolatile(states, i) != POD_STATE_FREE) {
                continue;
            }
            if (podId.equals(podIds[i])) {
                return i;
            }
            if (anyFree < 0) {
                anyFree = i;
            }
            if (neverUsed < 0 && generations[i] == 0) {
                neverUsed = i;
            }
        }
        return neverUsed >= 0 ? neverUsed : anyFree;
    }

    synchronized int slotOf(final String podId) {
        final Integer slot = slotByPodId.get(podId);
        return slot == null ? -1 : slot;
    }

    boolean isAlive(final int slot) {
        return (int) STATE.getVolatile(states, slot) == POD_STATE_ALIVE;
    }

    int state(final int slot) {
        return (int) STATE.getVolatile(states, slot);
    }

    synchronized String podId(final int slot) {
        return podIds[slot];
    }

    /**
     * @return the model the slot's pod registered with, as the pod table holds it (null when it gave none).
     */
    synchronized String model(final int slot) {
        final long base = IndexDescriptor.podEntryOffset(slot);
        final int length = Math.clamp(segment.get(ValueLayout.JAVA_INT,
            base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET), 0, IndexDescriptor.POD_MODEL_MAX_LENGTH);
        if (length == 0) {
            return null;
        }
        final byte[] model = new byte[length];
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_MODEL_OFFSET, model, 0, length);
        return new String(model, StandardCharsets.UTF_8);
    }

    synchronized int generation(final int slot) {
        return generations[slot];
    }

    /**
     * Phase 1 of pod removal: clears the alive bit and queues the pod's bits for the sweep.
     *
     * @return true when the pod was alive.
     */
    synchronized boolean down(final int slot) {
        if ((int) STATE.getVolatile(states, slot) != POD_STATE_ALIVE) {
            return false;
        }
        LONG.getAndBitwiseAnd(segment, aliveWordOffset(slot), ~(1L << slot));
        STATE.setVolatile(states, slot, POD_STATE_DRAINING);
        writeState(slot, POD_STATE_DRAINING);
        slotByPodId.remove(podIds[slot]);
        sweepPending[slot >>> 6] |= 1L << slot;
        return true;
    }

    /**
     * Phase 2 of pod removal, bounded: sweeps one shard for the pods being drained; after the last shard of a
     * pass, frees their slots.
     *
     * @return 1 when a shard was swept, else 0.
     */
    synchronized int sweepStep() {
        if (sweepShard < 0) {
            if (!hasPendingSweep()) {
                return 0;
            }
            System.arraycopy(sweepPending, 0, sweepCurrent, 0, sweepPending.length);
            Arrays.fill(sweepPending, 0L);
            sweepShard = 0;
        }
        sweep(sweepShard, sweepCurrent[0], sweepCurrent[1], sweepCurrent[2], sweepCurrent[3]);
        if (++sweepShard == entries.g.shardCount) {
            sweepShard = -1;
            for (int slot = 0; slot < maxPods; slot++) {
                if ((sweepCurrent[slot >>> 6] & (1L << slot)) != 0) {
                    writeState(slot, POD_STATE_FREE);
                    STATE.setVolatile(states, slot, POD_STATE_FREE);
                }
            }
        }
        return 1;
    }

    synchronized boolean isSweeping() {
        return sweepShard >= 0 || hasPendingSweep();
    }

    private boolean hasPendingSweep() {
        return (sweepPending[0] | sweepPending[1] | sweepPending[2] | sweepPending[3]) != 0;
    }

    /**
     * Removes every block of a pod that stays alive, all shards at once (its later stores must not be wiped by a
     * sweep still in flight). Called by the pod's writer agent.
     */
    void clear(final int slot) {
        if (!isAlive(slot)) {
            return;
        }
        final long bit = 1L << slot;
        final int word = slot >>> 6;
        final LongArrayList parents = new LongArrayList();
        for (int shard = 0; shard < entries.g.shardCount; shard++) {
            sweeper.sweep(shard, word == 0 ? bit : 0, word == 1 ? bit : 0, word == 2 ? bit : 0,
                word == 3 ? bit : 0, parents);
        }
    }

    private void sweep(final int shard, final long m0, final long m1, final long m2, final long m3) {
        sweeper.sweep(shard, m0, m1, m2, m3, sweepParents);
    }

    /**
     * Sets or clears an alive pod's suspect flag (layout 3.2) under the entry's seqlock, then bumps the pod table
     * version, so routers that follow the version learn it. Called by the pod's writer agent.
     *
     * @return true when the flag changed.
     */
    synchronized boolean suspect(final int slot, final boolean suspect) {
        if ((int) STATE.getVolatile(states, slot) != POD_STATE_ALIVE) {
            return false;
        }
        final long base = IndexDescriptor.podEntryOffset(slot);
        final int flags = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET);
        final int updated = suspect ? flags | IndexDescriptor.POD_FLAG_SUSPECT
            : flags & ~IndexDescriptor.POD_FLAG_SUSPECT;
        if (updated == flags) {
            return false;
        }
        final long odd = Seqlock.beginWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET, updated);
        Seqlock.endWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET, odd);
        bumpVersion();
        return true;
    }

    /**
     * @return true when the slot's entry carries the suspect flag.
     */
    synchronized boolean isSuspect(final int slot) {
        final long base = IndexDescriptor.podEntryOffset(slot);
        return (segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET)
            & IndexDescriptor.POD_FLAG_SUSPECT) != 0;
    }

    /**
     * Upgrades the pod entries of a file written with layout 3.0 or 3.1 to 3.2, in place and before the new version
     * is stored: there the flags word held the last 4 bytes of a model name (up to 120 bytes then, 116 now), or
     * stale bytes of a longer name the slot held earlier. Every entry's flags become 0 and a longer model name is
     * cut to 116 bytes at a UTF-8 character boundary, each under the entry's seqlock; then the pod table version is
     * bumped.
     *
     * @param segment the mapped index file.
     * @param maxPods the file's pod slots.
     */
    static void upgradeToFlags(final MemorySegment segment, final int maxPods) {
        for (int slot = 0; slot < maxPods; slot++) {
            final long base = IndexDescriptor.podEntryOffset(slot);
            final int modelLength = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET);
            int cut = Math.clamp(modelLength, 0, IndexDescriptor.POD_MODEL_MAX_LENGTH);
            // A UTF-8 continuation byte (10xxxxxx) at the cut belongs to a character that started before it.
            while (cut > 0 && cut < modelLength && (segment.get(ValueLayout.JAVA_BYTE,
                base + IndexDescriptor.POD_MODEL_OFFSET + cut) & 0xC0) == 0x80) {
                cut--;
            }
            if (Seqlock.isWriting((long) LONG.get(segment, base + IndexDescriptor.POD_SEQ_OFFSET))) {
                continue; // a registration a crash interrupted: IndexRepair frees the slot
            }
            final long odd = Seqlock.beginWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
            segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET, cut);
            segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET, 0);
            Seqlock.endWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET, odd);
        }
        LONG.getAndAdd(segment, (long) IndexDescriptor.POD_TABLE_VERSION_OFFSET, 1L);
    }

    private void writeState(final int slot, final int state) {
        final long base = IndexDescriptor.podEntryOffset(slot);
        final long odd = Seqlock.beginWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET, state);
        Seqlock.endWrite(segment, base + IndexDescriptor.POD_SEQ_OFFSET, odd);
        bumpVersion();
    }

    private void bumpVersion() {
        LONG.getAndAdd(segment, (long) IndexDescriptor.POD_TABLE_VERSION_OFFSET, 1L);
    }

    static long aliveWordOffset(final int slot) {
        return ALIVE_BITMAP_OFFSET + (slot >>> 6) * 8L;
    }
}
