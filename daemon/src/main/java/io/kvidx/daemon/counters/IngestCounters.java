package io.kvidx.daemon.counters;

import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.ConcurrentCountersManager;
import org.agrona.concurrent.status.CountersManager;
import org.agrona.concurrent.status.CountersReader;

import java.nio.ByteBuffer;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * The daemon's counters, one per {@link CounterType}, registered in one place. With an Aeron client the counters
 * live in the media driver's CnC file and stock {@code AeronStat} shows them; without one they live in the cell's
 * counters file ({@code io.kvidx.daemon.ops.CountersFile}); tests may keep them in a process-local buffer.
 *
 * <p><b>Note:</b> thread safe: counters are atomic; any thread may increment.
 */
public final class IngestCounters implements AutoCloseable {
    private final Map<CounterType, AtomicCounter> counters = new EnumMap<>(CounterType.class);
    private final CountersReader reader;

    private IngestCounters(final BiFunction<Integer, String, AtomicCounter> factory, final CountersReader reader) {
        this.reader = reader;
        for (final CounterType type : CounterType.values()) {
            counters.put(type, factory.apply(type.typeId(), type.label()));
        }
    }

    /**
     * Counters in a process-local buffer (tests, or a daemon without Aeron).
     *
     * @return the counters.
     */
    public static IngestCounters local() {
        final int n = CounterType.values().length + 8;
        final AtomicBuffer meta = new UnsafeBuffer(ByteBuffer.allocateDirect(n * CountersReader.METADATA_LENGTH));
        final AtomicBuffer values = new UnsafeBuffer(ByteBuffer.allocateDirect(n * CountersReader.COUNTER_LENGTH));
        final CountersManager manager = new ConcurrentCountersManager(meta, values);
        return new IngestCounters((type, label) -> manager.newCounter(label, type), manager);
    }

    /**
     * Counters allocated by a counters manager, e.g. over the cell's counters file.
     *
     * @param manager allocates the counters.
     * @return the counters.
     */
    public static IngestCounters in(final CountersManager manager) {
        return new IngestCounters((type, label) -> manager.newCounter(label, type), manager);
    }

    /**
     * Counters allocated through a factory, e.g. {@code Aeron::addCounter}.
     *
     * @param factory (type id, label) to counter.
     * @param reader  a reader of where they live.
     * @return the counters.
     */
    public static IngestCounters of(final BiFunction<Integer, String, AtomicCounter> factory,
        final CountersReader reader) {
        return new IngestCounters(factory, reader);
    }

    /**
     * @param type a counter type.
     * @return its counter.
     */
    public AtomicCounter get(final CounterType type) {
        return counters.get(type);
    }

    /**
     * @param type a counter type.
     * @return its current value.
     */
    public long value(final CounterType type) {
        return counters.get(type).get();
    }

    /**
     * @return where the counters live.
     */
    public CountersReader reader() {
        return reader;
    }

    /**
     * @return "label: value" lines, for logs and the CLI.
     */
    public String describe() {
        final StringBuilder b = new StringBuilder();
        for (final Map.Entry<CounterType, AtomicCounter> e : counters.entrySet()) {
            b.append(e.getKey().label()).append(": ").append(e.getValue().get()).append('\n');
        }
        return b.toString();
    }

    @Override
    public void close() {
        for (final AtomicCounter c : counters.values()) {
            c.close();
        }
    }
}
