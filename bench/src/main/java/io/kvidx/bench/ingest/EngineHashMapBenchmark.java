package io.kvidx.bench.ingest;

import io.kvidx.bench.BenchFlags;
import io.kvidx.daemon.state.PodBlockMap;
import net.openhft.chronicle.core.values.LongValue;
import net.openhft.chronicle.map.ChronicleMap;
import net.openhft.chronicle.values.Values;
import org.agrona.collections.Long2LongHashMap;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The daemon's per-pod engine hash to router key map on the write path, three ways, in one run (ADR 0007): the
 * mapped {@link PodBlockMap} (survives a restart), a Chronicle Map persisted to /dev/shm (the design card's
 * choice for daemon state), and the heap {@code Long2LongHashMap} pair the daemon used before (lost on restart).
 *
 * <p>Each operation is what one block of a churning pod costs: look up the hash stored just before (a BlockStored's
 * parent), release the hash stored {@code live} operations ago (its BlockRemoved) and store a new engine hash (with
 * its medium): a steady state of {@code live} mappings, the default per-pod bound. The hashes are random, so
 * a map of that size is mostly out of cache, as on a busy daemon.
 *
 * <p>{@code ./kvidx bench EngineHashMapBenchmark}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {
    BenchFlags.CHRONICLE_ANALYTICS_OFF, BenchFlags.F1, BenchFlags.F2, BenchFlags.F3, BenchFlags.F4, BenchFlags.F5,
    BenchFlags.F6, BenchFlags.F7, BenchFlags.F8, BenchFlags.F9, BenchFlags.F10, BenchFlags.F11, BenchFlags.F12,
    BenchFlags.F13, "-Xms2g", "-Xmx2g"})
public class EngineHashMapBenchmark {
    /** Mappings held in steady state. */
    @Param({"131072"})
    public int live;

    private Path dir;
    private long[] ring;
    private int at;
    private SplittableRandom random;
    private PodBlockMap mapped;
    private Long2LongHashMap heapKeys;
    private Long2LongHashMap heapMedia;
    private ChronicleMap<LongValue, LongValue> chronicle;
    private LongValue chronicleKey;
    private LongValue chronicleValue;

    /**
     * @throws IOException on failure.
     */
    @Setup(Level.Trial)
    public void setUp() throws IOException {
        BenchFlags.disableChronicleAnalytics();
        dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-hashmap");
        mapped = PodBlockMap.open(dir.resolve("pod.blocks"), "bench-pod", 1, live);
        heapKeys = new Long2LongHashMap(1024, 0.6f, 0);
        heapMedia = new Long2LongHashMap(1024, 0.6f, 0);
        chronicle = ChronicleMap.of(LongValue.class, LongValue.class).name("kvidx-bench-hashes")
            .entries(live + 1024).putReturnsNull(true).removeReturnsNull(true)
            .createPersistedTo(dir.resolve("pod.cm3").toFile());
        chronicleKey = Values.newHeapInstance(LongValue.class);
        chronicleValue = Values.newHeapInstance(LongValue.class);
        ring = new long[live];
        random = new SplittableRandom(7);
        for (int i = 0; i < live; i++) {
            final long h = random.nextLong() | 1;
            ring[i] = h;
            mapped.store(h, h * 31, 1);
            heapKeys.put(h, h * 31);
            chronicleKey.setValue(h);
            chronicleValue.setValue(h * 31);
            chronicle.put(chronicleKey, chronicleValue);
        }
    }

    /**
     * @throws IOException on failure.
     */
    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        mapped.close();
        chronicle.close();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private long next() {
        final long h = random.nextLong() | 1;
        return h;
    }

    /**
     * @return a value to consume.
     */
    @Benchmark
    public long podBlockMap() {
        final long h = next();
        final long old = ring[at];
        final long parent = ring[(at + live - 1) % live];
        ring[at] = h;
        at = (at + 1) % live;
        final long key = mapped.get(parent);
        final long released = mapped.release(old, 1);
        mapped.store(h, h * 31, 1);
        return key + released;
    }

    /**
     * @return a value to consume.
     */
    @Benchmark
    public long heapLong2Long() {
        final long h = next();
        final long old = ring[at];
        final long parent = ring[(at + live - 1) % live];
        ring[at] = h;
        at = (at + 1) % live;
        final long key = heapKeys.get(parent);
        // The GPU-only case: the media map is consulted only when it holds something.
        final long media = heapMedia.isEmpty() ? 0 : heapMedia.get(old);
        final long released = heapKeys.remove(old);
        heapKeys.put(h, h * 31);
        return key + released + media;
    }

    /**
     * @return a value to consume.
     */
    @Benchmark
    public long chronicleMap() {
        final long h = next();
        final long old = ring[at];
        final long parent = ring[(at + live - 1) % live];
        ring[at] = h;
        at = (at + 1) % live;
        chronicleKey.setValue(parent);
        final LongValue got = chronicle.getUsing(chronicleKey, chronicleValue);
        final long key = got == null ? 0 : got.getValue();
        chronicleKey.setValue(old);
        chronicle.remove(chronicleKey);
        chronicleKey.setValue(h);
        chronicleValue.setValue(h * 31);
        chronicle.put(chronicleKey, chronicleValue);
        return key;
    }
}
