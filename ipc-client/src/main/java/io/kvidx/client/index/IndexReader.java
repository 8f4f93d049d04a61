package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.atomic.LongAdder;

import static io.kvidx.client.index.IndexDescriptor.ALIVE_BITMAP_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH_SHIFT;
import static io.kvidx.client.index.IndexDescriptor.OVERFLOW_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.POD_TABLE_VERSION_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_HEADER_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.SHARD_VERSION_OFFSET;

/**
 * Read-only view of a cell's block index, mapped from the daemon's file; answers prefix queries.
 *
 * <p>Attach with {@link #attach(Context)}: it waits for the file and its layout version, rejects another major
 * version, a short file and a stale writer heartbeat, each with its own {@link IndexException}.
 *
 * <p>Queries are lock-free and allocation-free: each lookup reads the shard's seqlock version, probes, then checks
 * the version again and retries when the writer moved entries meanwhile (see docs/index-layout.md). The mapping
 * is read-only: this class cannot write to the file.
 *
 * <p>No read waits without a bound. A lookup that finds its shard locked (or changed under it) retries for the
 * context's read bound ({@link Context#readBoundNs(long)}, default 50 us; counted from the first clock reading, so
 * {@value #SPINS_PER_CLOCK_CHECK} spins more), then throws
 * {@link IndexBusyException} (counted by {@link #busyCount()}), or {@link StaleWriterException} when the writer's
 * heartbeat has stopped; {@link #pod(int)} is bounded the same way. The clock is read only while waiting, once
 * every {@value #SPINS_PER_CLOCK_CHECK} spins: an uncontended lookup never reads it.
 *
 * <p>Each query records in its {@link PrefixResult} the pod table version it saw
 * ({@link PrefixResult#podTableVersion()}), loaded after every alive word and entry it read: a caller that maps
 * slots to pod ids compares it with the version its mapping was read at (see {@link #podTableVersion()}).
 *
 * <p><b>Note:</b> thread safe; any number of threads may query one reader, each with its own
 * {@link PrefixResult}. The daemon's IndexWriter is the only writer of the file.
 */
public final class IndexReader implements AutoCloseable {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;
    /**
     * Plain loads without the alignment check (every field is 8-byte aligned anyway) for data read between two
     * reads of a seqlock version; explicit fences order them.
     */
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    /** Spins between two clock readings while a reader waits for the writer (a power of two): about 1-3 us. */
    private static final int SPINS_PER_CLOCK_CHECK = 64;

    private final MappedRegion region;
    private final MemorySegment segment;
    private final int shardCount;
    private final int slotsPerShard;
    private final int shardBits;
    private final int slotBits;
    private final int slotMask;
    private final int maxPods;
    private final int maxChain;
    private final int blockSize;
    private final int keyScheme;
    private final int layoutVersion;
    private final long epoch;
    private final long writerPid;
    private final long shardHeadersOffset;
    private final long tablesOffset;
    private final long shardTableLength;
    private final long overflowOffset;
    private final int overflowPerShard;
    /** Pods words are plain 64-bit bitmaps (at most 64 pods): one load per lookup. */
    private final boolean direct;
    private final int overflowMask;
    private final boolean prefetch;
    private final long heartbeatTimeoutMs;
    private final long readBoundNs;
    /** Reads that gave up at the read bound; touched only then. */
    private final LongAdder busy = new LongAdder();

    private IndexReader(final MappedRegion region, final Context context) {
        this.region = region;
        this.segment = region.segment();
        this.layoutVersion = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.LAYOUT_VERSION_OFFSET);
        this.shardCount = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET);
        this.slotsPerShard = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET);
        this.maxPods = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET);
        this.maxChain = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_CHAIN_OFFSET);
        this.blockSize = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.BLOCK_SIZE_OFFSET);
        this.keyScheme = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.KEY_SCHEME_OFFSET);
        this.epoch = segment.get(ValueLayout.JAVA_LONG, IndexDescriptor.EPOCH_OFFSET);
        this.writerPid = segment.get(ValueLayout.JAVA_LONG, IndexDescriptor.WRITER_PID_OFFSET);
        this.shardBits = Integer.numberOfTrailingZeros(shardCount);
        this.slotBits = Integer.numberOfTrailingZeros(slotsPerShard);
        this.slotMask = slotsPerShard - 1;
        this.shardHeadersOffset = IndexDescriptor.shardHeadersOffset(maxPods);
        this.tablesOffset = IndexDescriptor.tablesOffset(maxPods, shardCount);
        this.shardTableLength = (long) slotsPerShard * ENTRY_LENGTH;
        this.overflowOffset = IndexDescriptor.overflowOffset(maxPods, shardCount, slotsPerShard);
        this.overflowPerShard = IndexDescriptor.overflowPerShard(maxPods, slotsPerShard);
        this.overflowMask = Math.max(0, overflowPerShard - 1);
        this.direct = IndexDescriptor.isDirect(maxPods);
        this.prefetch = context.prefetch();
        this.heartbeatTimeoutMs = context.heartbeatTimeoutMs();
        this.readBoundNs = context.readBoundNs();
    }

    /**
     * Maps a cell's index read-only, waiting up to the context's attach timeout for it to appear.
     *
     * @param context where and how to attach.
     * @return the reader.
     * @throws IndexNotFoundException   when no ready file appears in time.
     * @throws IndexFormatException     when the file is not a kvidx index.
     * @throws IndexVersionException    when its layout major version differs.
     * @throws IndexTruncatedException  when the file is shorter than its header says.
     * @throws StaleWriterException     when the writer's heartbeat is older than the heartbeat timeout.
     * @throws IndexAccessDeniedException when this process may not read the file (or search its directory).
     */
    public static IndexReader attach(final Context context) {
        context.conclude();
        final Path file = context.indexFile();
        final long deadlineMs = System.currentTimeMillis() + context.attachTimeoutMs();
        String lastProblem = "no file";
        while (true) {
            final MappedRegion region = tryMap(file);
            if (region != null) {
                boolean keep = false;
                try {
                    final MemorySegment header = region.segment();
                    final int version = (int) Layouts.INT.getAcquire(header,
                        (long) IndexDescriptor.LAYOUT_VERSION_OFFSET);
                    if (version != 0) {
                        final IndexReader reader = validate(region, file, context, version);
                        keep = true;
                        return reader;
                    }
                    lastProblem = "layout version still 0 (writer not ready)";
                } finally {
                    if (!keep) {
                        region.close();
                    }
                }
            }
            if (System.currentTimeMillis() >= deadlineMs) {
                throw new IndexNotFoundException("no ready kvidx index at " + file + " after "
                    + context.attachTimeoutMs() + " ms (" + lastProblem + "); is the daemon running with dir="
                    + context.dir() + " cell=" + context.cell() + "?");
            }
            try {
                Thread.sleep(10);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IndexNotFoundException("interrupted while waiting for " + file, ex);
            }
        }
    }

    private static MappedRegion tryMap(final Path file) {
        try {
            final long size = Files.size(file);
            if (size < IndexDescriptor.HEADER_LENGTH) {
                if (size > 0) {
                    throw new IndexTruncatedException("index file " + file + " is " + size
                        + " bytes, shorter than its " + IndexDescriptor.HEADER_LENGTH + "-byte header");
                }
                return null;
            }
            return MappedRegion.mapReadOnly(file, size);
        } catch (final NoSuchFileException ex) {
            return null;
        } catch (final AccessDeniedException ex) {
            throw IndexAccessDeniedException.of(file, ex);
        } catch (final IOException ex) {
            throw new IndexException("cannot map index file " + file + ": " + ex.getMessage(), ex);
        }
    }

    private static IndexReader validate(final MappedRegion region, final Path file, final Context context,
        final int version) {
        final MemorySegment s = region.segment();
        final long magic = s.get(ValueLayout.JAVA_LONG, IndexDescriptor.MAGIC_OFFSET);
        if (magic != IndexDescriptor.MAGIC) {
            throw new IndexFormatException("not a kvidx index: " + file + " has magic 0x" + Long.toHexString(magic)
                + ", expected 0x" + Long.toHexString(IndexDescriptor.MAGIC));
        }
        if (IndexDescriptor.majorVersion(version) != IndexDescriptor.VERSION_MAJOR) {
            throw new IndexVersionException("index " + file + " has layout version "
                + IndexDescriptor.versionString(version) + "; this reader understands "
                + IndexDescriptor.versionString(IndexDescriptor.LAYOUT_VERSION) + " (major "
                + IndexDescriptor.VERSION_MAJOR + " only)");
        }
        final int headerLength = s.get(ValueLayout.JAVA_INT, IndexDescriptor.HEADER_LENGTH_OFFSET);
        final int shards = s.get(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET);
        final int slots = s.get(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET);
        final int pods = s.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET);
        final int chain = s.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_CHAIN_OFFSET);
        final String problem = IndexDescriptor.validateGeometry(shards, slots, pods, chain);
        if (problem != null || headerLength != IndexDescriptor.HEADER_LENGTH) {
            throw new IndexFormatException("index " + file + " has an impossible geometry: "
                + (problem != null ? problem : "header length " + headerLength));
        }
        final long declared = s.get(ValueLayout.JAVA_LONG, IndexDescriptor.FILE_LENGTH_OFFSET);
        final long expected = IndexDescriptor.fileLength(pods, shards, slots);
        if (declared != expected) {
            throw new IndexFormatException("index " + file + " declares " + declared + " bytes but its geometry needs "
                + expected);
        }
        if (s.byteSize() < declared) {
            throw new IndexTruncatedException("index " + file + " is " + s.byteSize() + " bytes, shorter than the "
                + declared + " bytes its header declares (truncated?)");
        }
        final IndexReader reader = new IndexReader(region, context);
        if (context.heartbeatTimeoutMs() > 0 && reader.isWriterStale()) {
            throw new StaleWriterException("index " + file + ": writer pid " + reader.writerPid
                + " last beat " + reader.heartbeatAgeMs() + " ms ago (timeout " + context.heartbeatTimeoutMs()
                + " ms); the daemon is gone or hung");
        }
        return reader;
    }

    /**
     * Answers how many leading blocks of a chain each candidate pod holds, by binary search over the chain:
     * probe the middle key, split the surviving pods into those that hold it and those that do not, and recurse
     * into both halves. Costs O(K log N) lookups for K distinct depths among the pods.
     *
     * <p>For a pod whose blocks form a prefix of the chain the answer is exact. For a pod holding a non-contiguous
     * subset, the depth d returned is a drop-off point: the pod holds block d-1 (or d = 0) and not block d (or
     * d = N); use {@link #queryExact} for the longest contiguous prefix.
     *
     * @param keys       the chain's block keys; keys[i] identifies the prefix of blocks 0..i.
     * @param length     chain length N, in [0, maxChainLength()].
     * @param candidates pods to consider, or null for every pod; dead pods are always excluded.
     * @param result     caller-owned result, overwritten.
     * @return the maximum depth over all pods.
     * @throws ChainTooLongException when length exceeds the index's maximum chain length.
     * @throws IndexBusyException    when a shard stays locked longer than the read bound.
     * @throws StaleWriterException  when a shard stays locked by a writer whose heartbeat has stopped.
     */
    public int query(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        final int max = search(keys, length, candidates, result);
        result.podTableVersion = podTableVersionAfterReads();
        return max;
    }

    private int search(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        checkChain(keys, length);
        result.reset(length);
        long s0 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET);
        long s1 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + 8);
        long s2 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + 16);
        long s3 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + 24);
        if (candidates != null) {
            s0 &= candidates.word(0);
            s1 &= candidates.word(1);
            s2 &= candidates.word(2);
            s3 &= candidates.word(3);
        }
        if (length == 0 || (s0 | s1 | s2 | s3) == 0) {
            return 0;
        }
        if (direct) {
            return queryDirect(keys, length, s0, result);
        }
        if (prefetch) {
            result.sink = prefetch(keys, length, result);
        }
        final long[] stack = result.stack;
        final long[] words = result.words;
        // Probe block 0 first: the pods that hold nothing of the chain (most of a large cell) leave after one
        // lookup instead of a descent to depth 0; the holders search [1, N].
        lookup(keys[0], words);
        int probes = 1;
        s0 &= words[0];
        s1 &= words[1];
        s2 &= words[2];
        s3 &= words[3];
        if ((s0 | s1 | s2 | s3) == 0) {
            result.probes(probes);
            return 0;
        }
        int top = 0;
        push(stack, top++, 1, length, s0, s1, s2, s3);
        int max = 0;
        while (top > 0) {
            final int base = --top * PrefixResult.FRAME;
            final int lo = (int) stack[base];
            final int hi = (int) stack[base + 1];
            final long f0 = stack[base + 2];
            final long f1 = stack[base + 3];
            final long f2 = stack[base + 4];
            final long f3 = stack[base + 5];
            if (lo == hi) {
                result.addAll(f0, f1, f2, f3, lo);
                max = Math.max(max, lo);
                continue;
            }
            final int mid = (lo + hi) >>> 1;
            lookup(keys[mid], words);
            probes++;
            final long h0 = f0 & words[0];
            final long h1 = f1 & words[1];
            final long h2 = f2 & words[2];
            final long h3 = f3 & words[3];
            final long l0 = f0 & ~words[0];
            final long l1 = f1 & ~words[1];
            final long l2 = f2 & ~words[2];
            final long l3 = f3 & ~words[3];
            if ((l0 | l1 | l2 | l3) != 0) {
                push(stack, top++, lo, mid, l0, l1, l2, l3);
            }
            if ((h0 | h1 | h2 | h3) != 0) {
                push(stack, top++, mid + 1, hi, h0, h1, h2, h3);
            }
        }
        result.probes(probes);
        return max;
    }

    /**
     * Like {@link #query} but walks the chain from its first block and stops at the first block each pod lacks:
     * the exact longest contiguous prefix per pod, at the cost of up to N lookups.
     *
     * @param keys       the chain's block keys.
     * @param length     chain length N, in [0, maxChainLength()].
     * @param candidates pods to consider, or null for every pod; dead pods are always excluded.
     * @param result     caller-owned result, overwritten.
     * @return the maximum depth over all pods.
     * @throws IndexBusyException   when a shard stays locked longer than the read bound.
     * @throws StaleWriterException when a shard stays locked by a writer whose heartbeat has stopped.
     */
    public int queryExact(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        final int max = walk(keys, length, candidates, result);
        result.podTableVersion = podTableVersionAfterReads();
        return max;
    }

    /**
     * The pod table version as a query records it: after every load of the query (alive words, entries). The
     * writer bumps the version before it sets the alive bit of a slot it gave to a new pod, and that pod's blocks
     * are stored later still; so when any load of the query saw the new pod (its alive bit or one of its bits), this
     * load sees the bumped version, and a caller whose slot-to-pod mapping is older notices. Loaded the other way
     * round, the query could pair an old version with the new pod's bits and report them under the old pod's name.
     */
    private long podTableVersionAfterReads() {
        VarHandle.loadLoadFence();
        return (long) LONG.getAcquire(segment, (long) POD_TABLE_VERSION_OFFSET);
    }

    private int walk(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        checkChain(keys, length);
        result.reset(length);
        long s0 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET);
        long s1 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + 8);
        long s2 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + 16);
        long s3 = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + 24);
        if (candidates != null) {
            s0 &= candidates.word(0);
            s1 &= candidates.word(1);
            s2 &= candidates.word(2);
            s3 &= candidates.word(3);
        }
        if (direct) {
            return queryExactDirect(keys, length, s0, result);
        }
        if (prefetch) {
            result.sink = prefetch(keys, length, result);
        }
        final long[] words = result.words;
        int i = 0;
        while (i < length && (s0 | s1 | s2 | s3) != 0) {
            lookup(keys[i], words);
            result.addAll(s0 & ~words[0], s1 & ~words[1], s2 & ~words[2], s3 & ~words[3], i);
            s0 &= words[0];
            s1 &= words[1];
            s2 &= words[2];
            s3 &= words[3];
            i++;
        }
        result.addAll(s0, s1, s2, s3, i);
        result.probes(i);
        return result.maxDepth();
    }

    /**
     * {@link #queryExact} in a direct cell: one pods word per block, the home offsets computed once (by the
     * prefetch when it is on), and the pods that leave at block i recorded with depth i.
     */
    private int queryExactDirect(final long[] keys, final int length, final long alive, final PrefixResult result) {
        final long[] offsets = chainOffsets(keys, length, result);
        long held = alive;
        int max = 0;
        int i = 0;
        while (i < length && held != 0) {
            final long w = lookupDirect(IndexDescriptor.storedKey(keys[i]), offsets[i]);
            final long left = held & ~w;
            if (left != 0 && i > 0) {
                result.addWord0(left, i);
                max = i;
            }
            held &= w;
            i++;
        }
        if (held != 0 && i > 0) {
            result.addWord0(held, i);
            max = i;
        }
        result.probes(i);
        return max;
    }

    /**
     * Loads the home entry of every key of the chain before the search starts: the loads are independent, so
     * their cache misses overlap instead of being paid one probe at a time.
     */
    private long prefetch(final long[] keys, final int length, final PrefixResult result) {
        // Two passes: first compute every home entry's offset, then load them in a loop of a few instructions per
        // load, so that many more misses are in flight at once than if each load waited behind its own hashing.
        final long[] offsets = homeOffsets(keys, length, result);
        final MemorySegment s = segment;
        long sink = 0;
        for (int i = 0; i < length; i++) {
            sink += (long) PLAIN.get(s, offsets[i]);
        }
        return sink;
    }

    /**
     * The home entry offset of every key of the chain, in the result's scratch array; with prefetching on, the
     * entries are loaded too (see {@link #prefetch}).
     */
    private long[] chainOffsets(final long[] keys, final int length, final PrefixResult result) {
        if (prefetch) {
            result.sink = prefetch(keys, length, result);
            return result.offsets(length);
        }
        return homeOffsets(keys, length, result);
    }

    /** The file offset of every key's home entry, in the result's scratch array. */
    private long[] homeOffsets(final long[] keys, final int length, final PrefixResult result) {
        final long[] offsets = result.offsets(length);
        for (int i = 0; i < length; i++) {
            offsets[i] = homeOffset(IndexDescriptor.storedKey(keys[i]));
        }
        return offsets;
    }

    /** File offset of a stored key's home entry: shard and slot are consecutive bits of its Fibonacci hash. */
    private long homeOffset(final long storedKey) {
        final long index = IndexDescriptor.homeIndex(IndexDescriptor.spread(storedKey), shardBits, slotBits);
        return tablesOffset + (index << ENTRY_LENGTH_SHIFT);
    }

    /**
     * {@link #query} in a direct cell (at most 64 pods): pod sets are single words, so the search keeps one word
     * per frame and each lookup returns the pods word itself.
     */
    private int queryDirect(final long[] keys, final int length, final long alive, final PrefixResult result) {
        final long[] offsets = chainOffsets(keys, length, result);
        long s0 = alive & lookupDirect(IndexDescriptor.storedKey(keys[0]), offsets[0]);
        int probes = 1;
        if (s0 == 0) {
            result.probes(probes);
            return 0;
        }
        final long[] stack = result.stack;
        int top = 0;
        stack[0] = 1;
        stack[1] = length;
        stack[2] = s0;
        top++;
        int max = 0;
        while (top > 0) {
            final int base = --top * 3;
            final int lo = (int) stack[base];
            final int hi = (int) stack[base + 1];
            final long f = stack[base + 2];
            if (lo == hi) {
                result.addWord0(f, lo);
                max = Math.max(max, lo);
                continue;
            }
            final int mid = (lo + hi) >>> 1;
            final long w = lookupDirect(IndexDescriptor.storedKey(keys[mid]), offsets[mid]);
            probes++;
            final long low = f & ~w;
            final long high = f & w;
            if (low != 0) {
                final int b = top++ * 3;
                stack[b] = lo;
                stack[b + 1] = mid;
                stack[b + 2] = low;
            }
            if (high != 0) {
                final int b = top++ * 3;
                stack[b] = mid + 1;
                stack[b + 1] = hi;
                stack[b + 2] = high;
            }
        }
        result.probes(probes);
        return max;
    }

    /**
     * The pods word of a stored key in a direct cell (0 when absent), by linear probing from its home entry's
     * file offset under the shard's seqlock.
     */
    private long lookupDirect(final long k, final long home) {
        final MemorySegment s = segment;
        final long inTables = home - tablesOffset;
        final long tableMask = shardTableLength - 1;
        final long table = home - (inTables & tableMask);
        final int shard = (int) (inTables >>> (slotBits + ENTRY_LENGTH_SHIFT));
        final long versionOffset = shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            // Plain loads with explicit fences: the same ordering as getAcquire / getOpaque without their
            // alignment checks, and the table wraps by a mask (docs/perf.md, layout 3.0 runs: 7 % less in-cache time).
            final long v1 = (long) PLAIN.get(s, versionOffset);
            VarHandle.acquireFence();
            if ((v1 & 1) == 0) {
                long pods = 0;
                long e = home;
                for (int n = 0; n <= slotMask; n++) {
                    final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
                    if (ek == k) {
                        // The key is published (release) after its pods word: read the pods word after the key.
                        VarHandle.acquireFence();
                        pods = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                        break;
                    }
                    if (ek == 0) {
                        break;
                    }
                    e = table + ((e + ENTRY_LENGTH - table) & tableMask);
                }
                VarHandle.loadLoadFence();
                if ((long) PLAIN.get(s, versionOffset) == v1) {
                    return pods;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = checkWait(waitStartNs, spins, shard, -1);
            }
        }
    }

    /**
     * Called every {@link #SPINS_PER_CLOCK_CHECK} spins of a reader waiting for the writer (a shard locked or
     * changed under it, or a pod table entry being changed): the only place a read looks at the clock. The first
     * call starts the wait's clock; a later one gives up once the read bound has passed.
     *
     * @param waitStartNs the wait's start as returned by the previous call (ignored by the first).
     * @param spins       spins so far, a multiple of {@link #SPINS_PER_CLOCK_CHECK}.
     * @param shard       the shard waited for, or -1.
     * @param slot        the pod slot waited for, or -1.
     * @return the wait's start.
     * @throws StaleWriterException when the writer's heartbeat has stopped: it died mid-change.
     * @throws IndexBusyException   when the read bound has passed with the writer alive.
     */
    private long checkWait(final long waitStartNs, final int spins, final int shard, final int slot) {
        final long now = System.nanoTime();
        if (isWriterStale()) {
            throw new StaleWriterException((shard >= 0 ? "shard " + shard : "pod table entry " + slot) + " of "
                + region.path() + " stays locked and the writer's heartbeat stopped " + heartbeatAgeMs() + " ms ago");
        }
        if (spins == SPINS_PER_CLOCK_CHECK) {
            return now;
        }
        final long waitedNs = now - waitStartNs;
        if (waitedNs < readBoundNs) {
            return waitStartNs;
        }
        busy.increment();
        throw new IndexBusyException((shard >= 0 ? "shard " + shard : "pod table entry " + slot) + " of "
            + region.path() + " stayed locked or kept changing for " + waitedNs / 1_000 + " us (read bound "
            + readBoundNs / 1_000 + " us); the writer is alive (heartbeat " + heartbeatAgeMs() + " ms ago)");
    }

    private static void push(final long[] stack, final int frame, final int lo, final int hi, final long w0,
        final long w1, final long w2, final long w3) {
        final int base = frame * PrefixResult.FRAME;
        stack[base] = lo;
        stack[base + 1] = hi;
        stack[base + 2] = w0;
        stack[base + 3] = w1;
        stack[base + 4] = w2;
        stack[base + 5] = w3;
    }

    private void checkChain(final long[] keys, final int length) {
        if (length < 0 || length > keys.length) {
            throw new IllegalArgumentException("chain length " + length + " outside the key array of "
                + keys.length);
        }
        if (length > maxChain) {
            throw new ChainTooLongException("chain of " + length + " blocks exceeds this index's maximum of "
                + maxChain + " (daemon option --max-chain-length, YAML maxChainLength)");
        }
    }

    /**
     * Reads the pod bitmap of one key into {@code out[0..3]} (all zero when the key is absent).
     *
     * @param key block key.
     * @param out at least 4 words, written.
     * @return true when the key is in the index.
     * @throws IndexBusyException   when the key's shard stays locked longer than the read bound.
     * @throws StaleWriterException when the shard stays locked by a writer whose heartbeat has stopped.
     */
    public boolean lookup(final long key, final long[] out) {
        final long k = IndexDescriptor.storedKey(key);
        if (direct) {
            // A direct cell deletes an entry with its last pod: a non-zero word is a present key.
            out[0] = lookupDirect(k, homeOffset(k));
            out[1] = 0;
            out[2] = 0;
            out[3] = 0;
            return out[0] != 0;
        }
        final long h = IndexDescriptor.spread(k);
        final int shard = (int) (h >>> (64 - shardBits));
        final int home = IndexDescriptor.homeSlot(h, shardBits, slotBits);
        final long versionOffset = shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        final long table = tablesOffset + shard * shardTableLength;
        final MemorySegment s = segment;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            final long v1 = (long) LONG.getAcquire(s, versionOffset);
            if ((v1 & 1) == 0) {
                long w0 = 0;
                long w1 = 0;
                long w2 = 0;
                long w3 = 0;
                boolean found = false;
                int idx = home;
                for (int n = 0; n <= slotMask; n++) {
                    final long e = table + ((long) idx << ENTRY_LENGTH_SHIFT);
                    final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
                    if (ek == k) {
                        // The key is published (release) after its pods word: read the pods word after the key.
                        VarHandle.acquireFence();
                        final long pods = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                        if (pods >= 0) {
                            for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
                                final int slot = IndexDescriptor.inlineSlot(pods, i);
                                final long bit = 1L << slot;
                                switch (slot >>> 6) {
                                    case 0 -> w0 |= bit;
                                    case 1 -> w1 |= bit;
                                    case 2 -> w2 |= bit;
                                    default -> w3 |= bit;
                                }
                            }
                        } else {
                            // Masked: even a corrupted index cannot point outside this shard's overflow area.
                            final long o = overflowOffset
                                + ((long) shard * overflowPerShard + ((int) pods & overflowMask)) * OVERFLOW_LENGTH;
                            // The bitmap is filled before its index is published (release) in the pods word.
                            VarHandle.acquireFence();
                            w0 = (long) PLAIN.get(s, o);
                            w1 = (long) PLAIN.get(s, o + 8);
                            w2 = (long) PLAIN.get(s, o + 16);
                            w3 = (long) PLAIN.get(s, o + 24);
                        }
                        found = true;
                        break;
                    }
                    if (ek == 0) {
                        break;
                    }
                    idx = (idx + 1) & slotMask;
                }
                VarHandle.loadLoadFence();
                if ((long) LONG.getOpaque(s, versionOffset) == v1) {
                    out[0] = w0;
                    out[1] = w1;
                    out[2] = w2;
                    out[3] = w3;
                    return found;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = checkWait(waitStartNs, spins, shard, -1);
            }
        }
    }

    /**
     * @param slot pod slot.
     * @return true when the pod's alive bit is set.
     */
    public boolean isAlive(final int slot) {
        checkSlot(slot);
        final long word = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + (slot >>> 6) * 8L);
        return (word & (1L << slot)) != 0;
    }

    /**
     * @param index word 0..3.
     * @return that word of the alive bitmap.
     */
    public long aliveWord(final int index) {
        return (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + index * 8L);
    }

    /**
     * Reads a pod table entry consistently (retrying while the writer changes it, up to the read bound). Allocates:
     * not for the hot path.
     *
     * <p>To map the slots of query answers to pods, read the entries after {@link #podTableVersion()} and compare
     * that version with each answer's {@link PrefixResult#podTableVersion()}: when they differ, a slot may have
     * changed hands since, and the entries must be read again.
     *
     * @param slot pod slot.
     * @return the pod's entry.
     * @throws IndexBusyException   when the entry stays locked longer than the read bound.
     * @throws StaleWriterException when it stays locked by a writer whose heartbeat has stopped.
     */
    public PodInfo pod(final int slot) {
        checkSlot(slot);
        final long base = IndexDescriptor.podEntryOffset(slot);
        // The version, not the one seen at attach: a restarted writer may have upgraded the file in place.
        final boolean hasFlags = (int) INT.getAcquire(segment, (long) IndexDescriptor.LAYOUT_VERSION_OFFSET)
            >= IndexDescriptor.FLAGS_MIN_VERSION;
        final int maxModel = hasFlags ? IndexDescriptor.POD_MODEL_MAX_LENGTH
            : IndexDescriptor.POD_MODEL_MAX_LENGTH_BEFORE_FLAGS;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            final long seq = (long) LONG.getAcquire(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
            if ((seq & 1) == 0) {
                final int generation = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET);
                final int state = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET);
                final int idLength = Math.clamp(segment.get(ValueLayout.JAVA_INT,
                    base + IndexDescriptor.POD_ID_LENGTH_OFFSET), 0, IndexDescriptor.POD_ID_MAX_LENGTH);
                final int modelLength = Math.clamp(segment.get(ValueLayout.JAVA_INT,
                    base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET), 0, maxModel);
                final int flags = hasFlags ? segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET)
                    : 0;
                final byte[] id = new byte[idLength];
                final byte[] model = new byte[modelLength];
                MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_ID_OFFSET, id, 0,
                    idLength);
                MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_MODEL_OFFSET, model, 0,
                    modelLength);
                VarHandle.loadLoadFence();
                if ((long) LONG.getOpaque(segment, base + IndexDescriptor.POD_SEQ_OFFSET) == seq) {
                    return new PodInfo(slot, generation, state, new String(id, StandardCharsets.UTF_8),
                        new String(model, StandardCharsets.UTF_8),
                        (flags & IndexDescriptor.POD_FLAG_SUSPECT) != 0);
                }
            }
            Thread.onSpinWait();
            if ((++spins & (SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = checkWait(waitStartNs, spins, -1, slot);
            }
        }
    }

    /**
     * The pod table version (layout 3.1): the writer increments it after every change of a pod table entry, and
     * before it sets the alive bit of a slot it has just given to a new pod. Load it after the alive words (or the
     * query answers) it is to vouch for: an alive bit seen before this load that belongs to a new pod comes with a
     * version at least as new as that pod's. One acquire load; allocation-free.
     *
     * @return the current pod table version.
     */
    public long podTableVersion() {
        return (long) LONG.getAcquire(segment, (long) POD_TABLE_VERSION_OFFSET);
    }

    /**
     * @return reads (lookups, queries, {@link #pod}) that gave up with {@link IndexBusyException} since attach.
     */
    public long busyCount() {
        return busy.sum();
    }

    /**
     * @return entries currently in the index (sum over shards; racy but never torn per shard).
     */
    public long entryCount() {
        long n = 0;
        for (int i = 0; i < shardCount; i++) {
            n += shardEntryCount(i);
        }
        return n;
    }

    /**
     * @param shard a shard, 0 .. {@link #shardCount()} - 1.
     * @return entries the shard holds now (one acquire load).
     */
    public int shardEntryCount(final int shard) {
        java.util.Objects.checkIndex(shard, shardCount);
        return (int) Layouts.INT.getAcquire(segment, shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH
            + IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET);
    }

    /**
     * @return entries evicted so far because a shard was full.
     */
    public long evictions() {
        long n = 0;
        for (int i = 0; i < shardCount; i++) {
            n += (long) LONG.getAcquire(segment, shardHeadersOffset + (long) i * SHARD_HEADER_LENGTH
                + IndexDescriptor.SHARD_EVICTIONS_OFFSET);
        }
        return n;
    }

    /**
     * Milliseconds since the writer's last heartbeat: this host's {@link System#currentTimeMillis()} minus the epoch
     * milliseconds the writer last stored (both processes read the same host clock). A live writer beats every
     * heartbeat interval (default 500 ms), so a healthy index shows 0 to about that; the value grows without bound
     * once the daemon is gone or hung, and is negative only when the clock stepped back. One acquire load and one
     * clock read; allocation-free.
     *
     * @return milliseconds since the writer's last heartbeat.
     */
    public long heartbeatAgeMs() {
        return System.currentTimeMillis() - (long) LONG.getAcquire(segment, (long) IndexDescriptor.HEARTBEAT_OFFSET);
    }

    /**
     * Whether the writer is stale: its heartbeat is older than the context's heartbeat timeout. The cheap way to
     * tell that answers have stopped being maintained: one acquire load and one {@link System#currentTimeMillis()}
     * (some 20 ns), allocation-free, so a router may ask before every decision.
     *
     * @return true when the heartbeat is older than the heartbeat timeout (never when the timeout is 0).
     */
    public boolean isWriterStale() {
        final long timeout = heartbeatTimeoutMs;
        return timeout > 0 && heartbeatAgeMs() > timeout;
    }

    /**
     * @return true when the file at this reader's path is no longer the one mapped (the daemon re-created it);
     * reattach to follow it. Reads the file system: not for the hot path.
     */
    public boolean isReplaced() {
        final java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(IndexDescriptor.EPOCH_OFFSET + 8)
            .order(java.nio.ByteOrder.LITTLE_ENDIAN);
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(region.path(),
            java.nio.file.StandardOpenOption.READ)) {
            while (header.hasRemaining()) {
                if (channel.read(header, header.position()) < 0) {
                    return true;
                }
            }
        } catch (final IOException ex) {
            return true;
        }
        return header.getLong(IndexDescriptor.MAGIC_OFFSET) != IndexDescriptor.MAGIC
            || header.getLong(IndexDescriptor.EPOCH_OFFSET) != epoch;
    }

    private void checkSlot(final int slot) {
        if (slot < 0 || slot >= maxPods) {
            throw new IllegalArgumentException("pod slot must be in [0, " + maxPods + "): " + slot);
        }
    }

    /**
     * @return shards in the index.
     */
    public int shardCount() {
        return shardCount;
    }

    /**
     * @return entries per shard.
     */
    public int slotsPerShard() {
        return slotsPerShard;
    }

    /**
     * @return pod slots in the cell.
     */
    public int maxPods() {
        return maxPods;
    }

    /**
     * @return the longest chain a query accepts.
     */
    public int maxChainLength() {
        return maxChain;
    }

    /**
     * @return the router block size the daemon keys blocks with.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * @return the key scheme, e.g. {@link IndexDescriptor#KEY_SCHEME_ROUTER_V1}.
     */
    public int keyScheme() {
        return keyScheme;
    }

    /**
     * @return the packed layout version of the file.
     */
    public int layoutVersion() {
        return layoutVersion;
    }

    /**
     * @return the epoch of this file (distinct per creation).
     */
    public long epoch() {
        return epoch;
    }

    /**
     * @return the writer's process id.
     */
    public long writerPid() {
        return writerPid;
    }

    /**
     * @return the mapped file.
     */
    public Path path() {
        return region.path();
    }

    /**
     * @return true once {@link #close()} unmapped the index.
     */
    public boolean isClosed() {
        return !segment.scope().isAlive();
    }

    /**
     * Unmaps the index. Any use after close, or racing with it, fails with {@link IllegalStateException} (never
     * touches unmapped memory): the caller must make sure no other thread still reads through this reader, as
     * {@code IndexReaderPodIndex} does.
     */
    @Override
    public void close() {
        region.close();
    }

    /**
     * A pod table entry.
     *
     * @param slot       pod slot.
     * @param generation times the slot was assigned.
     * @param state      one of the {@code IndexDescriptor.POD_STATE_*} values.
     * @param podId      pod id.
     * @param model      model name.
     * @param suspect    the pod is suspect (layout 3.2 flag; false in older files): the daemon could not keep its
     *                   state complete (an event gap its engine could not replay) and has not resynced it since, so
     *                   its depths may be wrong either way. A router may prefer other pods.
     */
    public record PodInfo(int slot, int generation, int state, String podId, String model, boolean suspect) {
        /**
         * An entry without flags.
         *
         * @param slot       pod slot.
         * @param generation times the slot was assigned.
         * @param state      one of the {@code IndexDescriptor.POD_STATE_*} values.
         * @param podId      pod id.
         * @param model      model name.
         */
        public PodInfo(final int slot, final int generation, final int state, final String podId, final String model) {
            this(slot, generation, state, podId, model, false);
        }
    }

    /**
     * Where and how a reader attaches. Defaults come from {@link IndexConfiguration}.
     */
    public static final class Context {
        private Path dir;
        private String cell;
        private long attachTimeoutMs = -1;
        private long heartbeatTimeoutMs = -1;
        private long readBoundNs = -1;
        private Boolean prefetch;

        /**
         * Applies defaults to unset values and validates.
         *
         * @return this.
         */
        public Context conclude() {
            if (dir == null) {
                dir = IndexConfiguration.dir();
            }
            if (cell == null) {
                cell = IndexConfiguration.cell();
            }
            if (attachTimeoutMs < 0) {
                attachTimeoutMs = IndexConfiguration.attachTimeoutMs();
            }
            if (heartbeatTimeoutMs < 0) {
                heartbeatTimeoutMs = IndexConfiguration.heartbeatTimeoutMs();
            }
            if (readBoundNs < 0) {
                readBoundNs = IndexConfiguration.readBoundNs();
            }
            if (readBoundNs <= 0) {
                throw new IllegalArgumentException("read bound must be > 0 ns: " + readBoundNs);
            }
            if (prefetch == null) {
                prefetch = IndexConfiguration.prefetch();
            }
            IndexConfiguration.indexFile(dir, cell);
            return this;
        }

        /**
         * @param dir index directory (default /dev/shm/kvidx).
         * @return this.
         */
        public Context dir(final Path dir) {
            this.dir = dir;
            return this;
        }

        /**
         * @return index directory.
         */
        public Path dir() {
            return dir;
        }

        /**
         * @param cell cell name (default "default").
         * @return this.
         */
        public Context cell(final String cell) {
            this.cell = cell;
            return this;
        }

        /**
         * @return cell name.
         */
        public String cell() {
            return cell;
        }

        /**
         * @param ms how long to wait for the file; 0 tries once.
         * @return this.
         */
        public Context attachTimeoutMs(final long ms) {
            this.attachTimeoutMs = ms;
            return this;
        }

        /**
         * @return attach timeout.
         */
        public long attachTimeoutMs() {
            return attachTimeoutMs;
        }

        /**
         * @param ms heartbeat age beyond which the writer is stale; 0 disables the check.
         * @return this.
         */
        public Context heartbeatTimeoutMs(final long ms) {
            this.heartbeatTimeoutMs = ms;
            return this;
        }

        /**
         * @return heartbeat timeout.
         */
        public long heartbeatTimeoutMs() {
            return heartbeatTimeoutMs;
        }

        /**
         * @param ns longest a read waits for a shard or pod table entry the writer holds locked (or keeps changing)
         *           before it throws {@link IndexBusyException}; default
         *           {@value IndexConfiguration#READ_BOUND_NS_DEFAULT} ns. Must be &gt; 0.
         * @return this.
         */
        public Context readBoundNs(final long ns) {
            this.readBoundNs = ns;
            return this;
        }

        /**
         * @return read bound.
         */
        public long readBoundNs() {
            return readBoundNs;
        }

        /**
         * @param prefetch load the home entry of every key of a chain before searching (default true): the cache
         *                 misses of a large index overlap instead of adding up, at a small cost when the index
         *                 fits in cache. See docs/perf.md.
         * @return this.
         */
        public Context prefetch(final boolean prefetch) {
            this.prefetch = prefetch;
            return this;
        }

        /**
         * @return whether queries prefetch the chain's home entries.
         */
        public boolean prefetch() {
            return prefetch == null || prefetch;
        }

        /**
         * @return the index file this context points at.
         */
        public Path indexFile() {
            return IndexConfiguration.indexFile(dir, cell);
        }
    }
}
