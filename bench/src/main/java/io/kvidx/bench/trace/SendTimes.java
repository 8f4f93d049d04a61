package io.kvidx.bench.trace;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A shared file of {@code System.nanoTime()} send times, one long per event, written by the replay driver when it
 * publishes a batch (release store) and read by the router process (acquire load) to time event-to-visible. 0 =
 * not sent yet. Both processes read the same monotonic clock (Linux CLOCK_MONOTONIC is host-wide).
 *
 * <p><b>Note:</b> one writer process (the driver), any number of readers.
 */
final class SendTimes {
    private static final VarHandle LONG = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private final MappedByteBuffer buffer;

    private SendTimes(final MappedByteBuffer buffer) {
        this.buffer = buffer;
    }

    /**
     * @param file  the file (created or extended).
     * @param count entries.
     * @return the mapping.
     * @throws IOException when the file cannot be mapped.
     */
    static SendTimes map(final Path file, final int count) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
            StandardOpenOption.WRITE)) {
            return new SendTimes(ch.map(FileChannel.MapMode.READ_WRITE, 0, 8L * count));
        }
    }

    void set(final int i, final long nanos) {
        LONG.setRelease(buffer, i * 8, nanos);
    }

    long get(final int i) {
        return (long) LONG.getAcquire(buffer, i * 8);
    }
}
