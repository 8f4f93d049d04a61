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
 * Chronicle Map as the routing-shard store: a persisted map (tmpfs) of {@link LongValue} block key to a
 * {@link PodBitmap} value, queried with the same binary search over the chain as kvidx. Lookups use
 * {@code getUsing} with a reused heap key and value: no allocation per lookup.
 *
 * <p>Needs the JVM flags in {@link BenchFlags#CHRONICLE} and {@code -Dchronicle.analytics.disable=true}.
 *
 * <p><b>Note:</b> one querying thread per instance.
 */
public final class ChronicleStore implements QueryStore {
    private static final int FRAME = 6;

    private final Path dir;
    private final Path file;
    private final ChronicleMap<LongValue, PodBitmap> map;
    private final LongValue key = Values.newHeapInstance(LongValue.class);
    private final PodBitmap value = Values.newHeapInstance(PodBitmap.class);
    private final long[] words = new long[4];
    private final long[] stack = new long[FRAME * 64];
    private final long[] all = new long[4];
    private final DepthResult result;

    private ChronicleStore(final Path dir, final Path file, final ChronicleMap<LongValue, PodBitmap> map,
        final int pods) {
        this.dir = dir;
        this.file = file;
        this.map = map;
        this.result = new DepthResult(pods);
        for (int p = 0; p < pods; p++) {
            all[p >>> 6] |= 1L << p;
        }
    }

    /**
     * Creates a map file sized for the naive map's entries and copies them in (one put per distinct key).
     *
     * @param naive the loaded naive baseline (same workload).
     * @param pods  pods in the workload.
     * @return the store; close it to delete the file.
     */
    public static ChronicleStore load(final NaiveStore naive, final int pods) {
        BenchFlags.disableChronicleAnalytics();
        final ConcurrentHashMap<Long, long[]> source = naive.map();
        final Path dir = KvidxStore.tempDir("kvidx-bench-chronicle-");
        final Path file = dir.resolve("shard.cm3");
        final ChronicleMap<LongValue, PodBitmap> map;
        try {
            map = ChronicleMap.of(LongValue.class, PodBitmap.class)
                .name("kvidx-bench")
                .entries(Math.max(1024, source.size()))
                .putReturnsNull(true)
                .createPersistedTo(file.toFile());
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
        final LongValue k = Values.newHeapInstance(LongValue.class);
        final PodBitmap v = Values.newHeapInstance(PodBitmap.class);
        for (final Map.Entry<Long, long[]> e : source.entrySet()) {
            k.setValue(e.getKey());
            final long[] w = e.getValue();
            for (int i = 0; i < 4; i++) {
                v.setWordAt(i, w[i]);
            }
            map.put(k, v);
        }
        return new ChronicleStore(dir, file, map, pods);
    }

    private void lookup(final long k, final long[] out) {
        key.setValue(k);
        final PodBitmap v = map.getUsing(key, value);
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
        return "chronicle";
    }

    /**
     * The same binary search as kvidx's reader: probe the middle key, split the surviving pods into those that
     * hold it and those that do not, recurse into both halves.
     */
    @Override
    public int query(final long[] chain) {
        final DepthResult r = result;
        r.reset();
        final int length = chain.length;
        if (length == 0) {
            return 0;
        }
        final long[] s = stack;
        final long[] w = words;
        int top = 0;
        push(s, top++, 0, length, all[0], all[1], all[2], all[3]);
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
            lookup(chain[mid], w);
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
        return map.offHeapMemoryUsed();
    }

    @Override
    public void close() {
        map.close();
        KvidxStore.deleteTree(dir);
    }
}
