package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.ffm.SharedFiles;

import java.nio.file.Path;

/**
 * Geometry and location of an index, for {@link IndexWriter#open} and {@link IndexWriter#create}. Defaults from
 * {@link IndexConfiguration} and {@link Configuration}.
 *
 * <p><b>Note:</b> not thread safe; fill it in on one thread before opening the writer.
 */
public final class IndexWriterContext {
    /** Most entries of an index (all shards). */
    public static final long MAX_ENTRIES = 1L << 30;

    Path dir;
    String cell;
    int shardCount = Configuration.SHARD_COUNT_DEFAULT;
    long capacityBlocks = Configuration.CAPACITY_BLOCKS_DEFAULT;
    int slotsPerShard;
    double maxLoadFactor = Configuration.MAX_LOAD_FACTOR_DEFAULT;
    int maxPods = IndexDescriptor.MAX_PODS;
    int maxChainLength = Configuration.MAX_CHAIN_LENGTH_DEFAULT;
    int blockSize = Configuration.BLOCK_SIZE_DEFAULT;
    int keyScheme = IndexDescriptor.KEY_SCHEME_ROUTER_V1;
    boolean deleteOnClose;
    boolean adviseRandom = true;
    boolean hugePages = true;
    boolean prefetch = true;
    int tierMapBlocks = Configuration.TIER_MAP_BLOCKS_DEFAULT;
    SharedFiles files;
    CellLock cellLock;
    boolean concluded;

    /**
     * Applies defaults and validates; computes slots per shard from the capacity.
     *
     * @return this.
     */
    public IndexWriterContext conclude() {
        if (concluded) {
            return this;
        }
        if (dir == null) {
            dir = IndexConfiguration.dir();
        }
        if (cell == null) {
            cell = IndexConfiguration.cell();
        }
        if (files == null) {
            files = SharedFiles.forGroup(null);
        }
        if (!(maxLoadFactor > 0.05 && maxLoadFactor <= 0.95)) {
            throw new IllegalArgumentException("max load factor must be in (0.05, 0.95]: " + maxLoadFactor);
        }
        if (blockSize < 1) {
            throw new IllegalArgumentException("block size must be >= 1: " + blockSize);
        }
        if (slotsPerShard == 0) {
            if (capacityBlocks < 1) {
                throw new IllegalArgumentException("capacity must be >= 1 block: " + capacityBlocks);
            }
            final long wanted = (long) Math.ceil(capacityBlocks / maxLoadFactor / Math.max(1, shardCount));
            slotsPerShard = (int) Math.min(IndexDescriptor.MAX_SLOTS_PER_SHARD, Math.max(
                IndexDescriptor.MIN_SLOTS_PER_SHARD, Long.highestOneBit(Math.max(1, wanted - 1)) << 1));
        }
        final String problem = IndexDescriptor.validateGeometry(shardCount, slotsPerShard, maxPods, maxChainLength);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        if ((long) shardCount * slotsPerShard > MAX_ENTRIES) {
            throw new IllegalArgumentException("at most 2^30 entries per index: " + shardCount + " shards x "
                + slotsPerShard + " slots");
        }
        TierMapDescriptor.slotsFor(tierMapBlocks);
        IndexConfiguration.indexFile(dir, cell);
        concluded = true;
        return this;
    }

    /**
     * The largest capacity {@link #conclude()} sizes an index for without exceeding the most entries per shard
     * or per index; a larger one would get fewer entries than asked for.
     *
     * @param shardCount    shards (a power of two).
     * @param maxLoadFactor fraction of a shard in use before it evicts.
     * @return the largest capacity in blocks.
     */
    public static long maxCapacityBlocks(final int shardCount, final double maxLoadFactor) {
        return (long) Math.floor(Math.min((double) IndexDescriptor.MAX_SLOTS_PER_SHARD * shardCount, MAX_ENTRIES)
            * maxLoadFactor);
    }

    /**
     * @param dir index directory.
     * @return this.
     */
    public IndexWriterContext dir(final Path dir) {
        this.dir = dir;
        return this;
    }

    /**
     * @param cell cell name.
     * @return this.
     */
    public IndexWriterContext cell(final String cell) {
        this.cell = cell;
        return this;
    }

    /**
     * @param shardCount shards, power of two in [2, 65536].
     * @return this.
     */
    public IndexWriterContext shardCount(final int shardCount) {
        this.shardCount = shardCount;
        return this;
    }

    /**
     * @param blocks blocks the index must hold before evicting; sizes slots per shard.
     * @return this.
     */
    public IndexWriterContext capacityBlocks(final long blocks) {
        this.capacityBlocks = blocks;
        return this;
    }

    /**
     * @param slots entries per shard (power of two); overrides the capacity.
     * @return this.
     */
    public IndexWriterContext slotsPerShard(final int slots) {
        this.slotsPerShard = slots;
        return this;
    }

    /**
     * @param factor fraction of a shard's entries in use before it evicts.
     * @return this.
     */
    public IndexWriterContext maxLoadFactor(final double factor) {
        this.maxLoadFactor = factor;
        return this;
    }

    /**
     * @param maxPods pod slots, 1..256.
     * @return this.
     */
    public IndexWriterContext maxPods(final int maxPods) {
        this.maxPods = maxPods;
        return this;
    }

    /**
     * @param maxChainLength longest chain a query accepts.
     * @return this.
     */
    public IndexWriterContext maxChainLength(final int maxChainLength) {
        this.maxChainLength = maxChainLength;
        return this;
    }

    /**
     * @param blockSize router block size in tokens.
     * @return this.
     */
    public IndexWriterContext blockSize(final int blockSize) {
        this.blockSize = blockSize;
        return this;
    }

    /**
     * @param deleteOnClose delete the file when the writer closes (tests, demo).
     * @return this.
     */
    public IndexWriterContext deleteOnClose(final boolean deleteOnClose) {
        this.deleteOnClose = deleteOnClose;
        return this;
    }

    /**
     * @param adviseRandom madvise(MADV_RANDOM) the mapping (default true).
     * @return this.
     */
    public IndexWriterContext adviseRandom(final boolean adviseRandom) {
        this.adviseRandom = adviseRandom;
        return this;
    }

    /**
     * @param hugePages madvise(MADV_HUGEPAGE) the mapping (default true); effective on tmpfs only when
     *                  /sys/kernel/mm/transparent_hugepage/shmem_enabled allows it (see tuning/).
     * @return this.
     */
    public IndexWriterContext hugePages(final boolean hugePages) {
        this.hugePages = hugePages;
        return this;
    }

    /**
     * @param prefetch load the home entries and eviction stamps of a whole store/remove batch before applying
     *                 it (default true): their cache misses overlap. Off only to measure what it is worth.
     * @return this.
     */
    public IndexWriterContext prefetch(final boolean prefetch) {
        this.prefetch = prefetch;
        return this;
    }

    /**
     * @param blocks most blocks per pod whose tiers the host tier map holds (beside the index, file {@code tiers});
     *               one more evicts the least recently updated (sampled).
     * @return this.
     */
    public IndexWriterContext tierMapBlocks(final int blocks) {
        this.tierMapBlocks = blocks;
        return this;
    }

    /**
     * @return most blocks per pod the host tier map holds.
     */
    public int tierMapBlocks() {
        return tierMapBlocks;
    }

    /**
     * @param files modes and group of the cell directory and index file (default: the user's primary group).
     * @return this.
     */
    public IndexWriterContext files(final SharedFiles files) {
        this.files = files;
        return this;
    }

    /**
     * Hands the writer the cell's lock its caller already holds (the daemon takes it before anything else of the
     * cell): the writer then neither takes nor releases it. Without one, {@link IndexWriter#open} and
     * {@link IndexWriter#create} take the cell's lock themselves and the writer releases it when it closes.
     *
     * @param lock the held lock of this context's cell, or null.
     * @return this.
     */
    public IndexWriterContext cellLock(final CellLock lock) {
        this.cellLock = lock;
        return this;
    }

    /**
     * @return the cell's lock handed in by the caller, or null when the writer takes its own.
     */
    public CellLock cellLock() {
        return cellLock;
    }

    /**
     * @return index directory.
     */
    public Path dir() {
        return dir;
    }

    /**
     * @return cell name.
     */
    public String cell() {
        return cell;
    }

    /**
     * @return shards.
     */
    public int shardCount() {
        return shardCount;
    }

    /**
     * @return entries per shard (after conclude).
     */
    public int slotsPerShard() {
        return slotsPerShard;
    }

    /**
     * @return pod slots.
     */
    public int maxPods() {
        return maxPods;
    }

    /**
     * @return longest chain a query accepts.
     */
    public int maxChainLength() {
        return maxChainLength;
    }

    /**
     * @return router block size.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * @return modes and group of the cell directory and the index file.
     */
    public SharedFiles files() {
        return files;
    }

    /**
     * @param scheme the key scheme written into the header ({@link IndexDescriptor#KEY_SCHEME_ROUTER_V1} or
     *               {@link IndexDescriptor#KEY_SCHEME_XXH3_CHAIN}): how the writer keys blocks.
     * @return this.
     */
    public IndexWriterContext keyScheme(final int scheme) {
        if (scheme != IndexDescriptor.KEY_SCHEME_ROUTER_V1 && scheme != IndexDescriptor.KEY_SCHEME_XXH3_CHAIN) {
            throw new IllegalArgumentException("unknown key scheme " + scheme);
        }
        this.keyScheme = scheme;
        return this;
    }

    /**
     * @return the key scheme written into the header.
     */
    public int keyScheme() {
        return keyScheme;
    }

    /**
     * @return whether the mapping is advised MADV_RANDOM.
     */
    public boolean adviseRandom() {
        return adviseRandom;
    }

    /**
     * @return whether the mapping is advised MADV_HUGEPAGE.
     */
    public boolean hugePages() {
        return hugePages;
    }

    /**
     * @return the index file.
     */
    public Path indexFile() {
        return IndexConfiguration.indexFile(dir, cell);
    }

    /**
     * Defaults of the writer's geometry.
     */
    public static final class Configuration {
        /** Default shards. */
        public static final int SHARD_COUNT_DEFAULT = 256;
        /** Default capacity: one million blocks. */
        public static final long CAPACITY_BLOCKS_DEFAULT = 1L << 20;
        /** Default fraction of a shard in use before it evicts. */
        public static final double MAX_LOAD_FACTOR_DEFAULT = 0.75;
        /** Default longest chain: 8192 blocks (128k tokens at block size 16). */
        public static final int MAX_CHAIN_LENGTH_DEFAULT = 8192;
        /** Default router block size (vLLM's default). */
        public static final int BLOCK_SIZE_DEFAULT = 16;
        /**
         * Default blocks per pod in the host tier map: 8192 (16384 slots, 256 KiB per pod, 64 MiB for 256 pods;
         * tmpfs pages of pods never registered are never touched).
         */
        public static final int TIER_MAP_BLOCKS_DEFAULT = 8192;

        private Configuration() {
        }
    }
}
