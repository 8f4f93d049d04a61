package io.kvidx.bench;

import net.openhft.chronicle.core.values.LongValue;
import net.openhft.chronicle.map.ChronicleMap;
import net.openhft.chronicle.values.Values;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Chronicle Map as the routing-shard store: a persisted map (tmpfs) of {@link LongValue} block key to a pod bitmap as
 * wide as the kvidx cell it stands beside: a {@link LongValue} (64 pods) or a 4-word {@link PodBitmap} (256 pods).
 * It runs kvidx's search ({@code IndexReader.query}): probe block 0 first, so the pods that hold nothing of the
 * chain leave after one lookup; then binary search over blocks [1, N], splitting the surviving pods at each probe
 * into those that hold the middle block and those that do not. Lookups use {@code getUsing} with a reused heap key
 * and value: no allocation per lookup. What it cannot do is kvidx's prefetch of every block's home entry.
 *
 * <p>Needs the JVM flags in {@link BenchFlags#CHRONICLE} and {@code -Dchronicle.analytics.disable=true}.
 *
 * <p><b>Note:</b> one querying thread per instance.
 */
public final class ChronicleStore implements QueryStore {
    private static final int FRAME = 6;

    private final Path dir;
    private final Path file;
    private final ChronicleMap<LongValue, LongValue> narrow;
    private final ChronicleMap<LongValue, PodBitmap> wide;
    private final LongValue key = Values.newHeapInstance(LongValue.class);
    private final LongValue narrowValue = Values.newHeapInstance(LongValue.class);
    private final PodBitmap wideValue = Values.newHeapInstance(PodBitmap.class);
    private final long[] words = new long[4];
    private final long[] stack = new long[FRAME * 256];
    private final long[] all = new long[4];
    private final DepthResult result;
    private final String name;

    private ChronicleStore(final Path dir, final Path file, final ChronicleMap<LongValue, LongValue> narrow,
        final ChronicleMap<LongValue, PodBitmap> wide, final int pods, final String name) {
        this.dir = dir;
        this.file = file;
        this.narrow = narrow;
        this.wide = wide;
        this.name = name;
        this.result = new DepthResult(pods);
        for (int p = 0; p < pods; p++) {
            all[p >>> 6] |= 1L << p;
        }
    }

    /**
     * Creates a map file sized for the naive map's entries and copies them in (one put per distinct key), with
     * values as wide as the naive map's bitmaps, named "chronicle".
     *
     * @param naive the loaded naive baseline (same workload).
     * @param pods  pods in the workload.
     * @return the store; close it to delete the file.
     */
    public static ChronicleStore load(final NaiveStore naive, final int pods) {
        return load(naive, pods, "chronicle");
    }

    /**
     * Like {@link #load(NaiveStore, int)} with the name given.
     *
     * @param naive the loaded naive baseline (same workload); its bitmap width (1 or 4 words) is this map's.
     * @param pods  pods in the workload.
     * @param name  the name this store reports.
     * @return the store; close it to delete the file.
     */
    public static ChronicleStore load(final NaiveStore naive, final int pods, final String name) {
        BenchFlags.disableChronicleAnalytics();
        final ConcurrentHashMap<Long, long[]> source = naive.map();
        final Path dir = KvidxStore.tempDir("kvidx-bench-chronicle-");
        final Path file = dir.resolve("shard.cm3");
        final LongValue k = Values.newHeapInstance(LongValue.class);
        try {
            if (naive.words() == 1) {
                final ChronicleMap<LongValue, LongValue> map = ChronicleMap.of(LongValue.class, LongValue.class)
                    .name(name).entries(Math.max(1024, source.size())).putReturnsNull(true)
                    .createPersistedTo(file.toFile());
                final LongValue v = Values.newHeapInstance(LongValue.class);
                for (final Map.Entry<Long, long[]> e : source.entrySet()) {
                    k.setValue(e.getKey());
                    v.setValue(e.getValue()[0]);
                    map.put(k, v);
                }
                return new ChronicleStore(dir, file, map, null, pods, name);
            }
            final ChronicleMap<LongValue, PodBitmap> map = ChronicleMap.of(LongValue.class, PodBitmap.class)
                .name(name).entries(Math.max(1024, source.size())).putReturnsNull(true)
                .createPersistedTo(file.toFile());
            final PodBitmap v = Values.newHeapInstance(PodBitmap.class);
            for (final Map.Entry<Long, long[]> e : source.entrySet()) {
                k.setValue(e.getKey());
                final long[] w = e.getValue();
                for (int i = 0; i < 4; i++) {
                    v.setWordAt(i, i < w.length ? w[i] : 0);
                }
                map.put(k, v);
            }
            return new ChronicleStore(dir, file, null, map, pods, name);
        } catch (final IOException ex) {
            KvidxStore.deleteTree(dir);
            throw new UncheckedIOException(ex);
        }
    }

    /** The 64-pod bitmap of a key, 0 when absent. */
    private long lookupNarrow(final long k) {
        key.setValue(k);
        final LongValue v = narrow.getUsing(key, narrowValue);
        return v == null ? 0 : v.getValue();
    }

    /** The 256-pod bitmap of a key into {@code out}, zeros when absent. */
    private void lookupWide(final long k, final long[] out) {
        key.setValue(k);
        final PodBitmap v = wide.getUsing(key, wideValue);
        if (v == null) {
            out[0] = 0;
            out[1] = 0;
            out[2] = 0;
            out[3] = 0;
        } else {
            out[0] = v.getWordAt(0);
            out[1] = v.getWordAt(1);
            out[2] = v.getWordAt(2);
            out[3] = v.getWordAt(3);
        }
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * @return bitmap words per value: 1 (64-pod cell) or 4 (256-pod cell).
     */
    public int words() {
        return narrow != null ? 1 : 4;
    }

    @Override
    public int query(final long[] keys, final int length) {
        result.reset();
        if (length == 0) {
            return 0;
        }
        return narrow != null ? queryNarrow(keys, length) : queryWide(keys, length);
    }

    /** kvidx's direct-cell search: one pods word per frame. */
    private int queryNarrow(final long[] chain, final int length) {
        final DepthResult r = result;
        final long first = all[0] & lookupNarrow(chain[0]);
        if (first == 0) {
            return 0;
        }
        final long[] s = stack;
        int top = 0;
        s[0] = 1;
        s[1] = length;
        s[2] = first;
        top++;
        int max = 0;
        while (top > 0) {
            final int base = --top * 3;
            final int lo = (int) s[base];
            final int hi = (int) s[base + 1];
            final long f = s[base + 2];
            if (lo == hi) {
                r.addWord(f, 0, lo);
                max = Math.max(max, lo);
                continue;
            }
            final int mid = (lo + hi) >>> 1;
            final long w = lookupNarrow(chain[mid]);
            final long low = f & ~w;
            final long high = f & w;
            if (low != 0) {
                final int b = top++ * 3;
                s[b] = lo;
                s[b + 1] = mid;
                s[b + 2] = low;
            }
            if (high != 0) {
                final int b = top++ * 3;
                s[b] = mid + 1;
                s[b + 1] = hi;
                s[b + 2] = high;
            }
        }
        return max;
    }

    /** kvidx's general-cell search: four pods words per frame. */
    private int queryWide(final long[] chain, final int length) {
        final DepthResult r = result;
        final long[] s = stack;
        final long[] w = words;
        lookupWide(chain[0], w);
        final long s0 = all[0] & w[0];
        final long s1 = all[1] & w[1];
        final long s2 = all[2] & w[2];
        final long s3 = all[3] & w[3];
        if ((s0 | s1 | s2 | s3) == 0) {
            return 0;
        }
        int top = 0;
        push(s, top++, 1, length, s0, s1, s2, s3);
        int max = 0;
        while (top > 0) {
            final int base = --top * FRAME;
            final int lo = (int) s[base];
            final int hi = (int) s[base + 1];
            final long f0 = s[base + 2];
            final long f1 = s[base + 3];
            final long f2 = s[base + 4];
            final long f3 = s[base + 5];
            if (lo == hi) {
                r.addAll(f0, f1, f2, f3, lo);
                max = Math.max(max, lo);
                continue;
            }
            final int mid = (lo + hi) >>> 1;
            lookupWide(chain[mid], w);
            final long l0 = f0 & ~w[0];
            final long l1 = f1 & ~w[1];
            final long l2 = f2 & ~w[2];
            final long l3 = f3 & ~w[3];
            if ((l0 | l1 | l2 | l3) != 0) {
                push(s, top++, lo, mid, l0, l1, l2, l3);
            }
            final long h0 = f0 & w[0];
            final long h1 = f1 & w[1];
            final long h2 = f2 & w[2];
            final long h3 = f3 & w[3];
            if ((h0 | h1 | h2 | h3) != 0) {
                push(s, top++, mid + 1, hi, h0, h1, h2, h3);
            }
        }
        return max;
    }

    private static void push(final long[] stack, final int frame, final int lo, final int hi, final long w0,
        final long w1, final long w2, final long w3) {
        final int base = frame * FRAME;
        stack[base] = lo;
        stack[base + 1] = hi;
        stack[base + 2] = w0;
        stack[base + 3] = w1;
        stack[base + 4] = w2;
        stack[base + 5] = w3;
    }

    @Override
    public int depthOf(final int pod) {
        return result.depthOf(pod);
    }

    @Override
    public long footprintBytes() {
        try {
            return Files.size(file);
        } catch (final IOException ex) {
            return -1;
        }
    }

    /**
     * @return Chronicle's own figure for the off-heap memory the map uses.
     */
    public long offHeapMemoryUsed() {
        return narrow != null ? narrow.offHeapMemoryUsed() : wide.offHeapMemoryUsed();
    }

    @Override
    public void close() {
        if (narrow != null) {
            narrow.close();
        } else {
            wide.close();
        }
        KvidxStore.deleteTree(dir);
    }
}
