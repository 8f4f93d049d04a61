package io.kvidx.daemon.state;

import java.nio.file.Path;

/**
 * Where the pods' {@link PodBlockMap}s live ({@code <dir>/<cell>/state/pod-<slot>.blocks}) and how large each is.
 * A map belongs to a slot and the slot's generation: a pod that keeps its slot across a daemon restart finds its
 * map again; a slot given to another pod (a new generation) starts empty.
 *
 * <p><b>Note:</b> immutable; each map it opens has one writer (the pod's writer agent).
 */
public final class PodBlockMaps {
    /** Name of the cell's state directory. */
    public static final String STATE_DIR_NAME = "state";
    /**
     * Default most blocks per pod: 131,072 (2M tokens at block size 16); each pod's map file starts at 128 KiB and
     * doubles as the pod fills, to at most 8 MiB of tmpfs. The daemon's {@code podMaxBlocks} default.
     */
    public static final int MAX_BLOCKS_DEFAULT = 1 << 17;

    private final Path dir;
    private final int maxBlocks;

    /**
     * @param dir       the state directory.
     * @param maxBlocks most blocks per pod.
     */
    public PodBlockMaps(final Path dir, final int maxBlocks) {
        if (maxBlocks < 1) {
            throw new IllegalArgumentException("max blocks per pod must be >= 1: " + maxBlocks);
        }
        this.dir = dir;
        this.maxBlocks = maxBlocks;
    }

    /**
     * @param indexFile the cell's index file.
     * @param maxBlocks most blocks per pod.
     * @return the maps of that cell, in the state directory beside the index file.
     */
    public static PodBlockMaps beside(final Path indexFile, final int maxBlocks) {
        return new PodBlockMaps(indexFile.resolveSibling(STATE_DIR_NAME), maxBlocks);
    }

    /**
     * @param slot       the pod's index slot.
     * @param podId      the pod.
     * @param generation the slot's generation.
     * @return the pod's map (re-used when the slot and generation match a previous daemon's).
     */
    public PodBlockMap open(final int slot, final String podId, final int generation) {
        return PodBlockMap.open(dir.resolve("pod-" + slot + ".blocks"), podId, generation, maxBlocks);
    }

    /**
     * @return the state directory.
     */
    public Path dir() {
        return dir;
    }

    /**
     * @return most blocks per pod.
     */
    public int maxBlocks() {
        return maxBlocks;
    }
}
