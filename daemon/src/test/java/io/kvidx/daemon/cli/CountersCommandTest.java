package io.kvidx.daemon.cli;

import io.kvidx.daemon.counters.CounterType;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.CountersManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CountersCommandTest {
    @TempDir
    Path dir;

    @Test
    void shouldPrintKvidxCountersAndSkipForeignOnesUnlessAsked() {
        final CountersManager manager = new CountersManager(
            new UnsafeBuffer(ByteBuffer.allocateDirect(64 * 1024)),
            new UnsafeBuffer(ByteBuffer.allocateDirect(16 * 1024)));
        final AtomicCounter stored = manager.newCounter(CounterType.BLOCKS_STORED.label(),
            CounterType.BLOCKS_STORED.typeId());
        stored.set(1_234_567);
        manager.newCounter("aeron bytes sent", 1);

        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CountersCommand.print(manager, false, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        final String out = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(out.contains("1,234,567 - " + CounterType.BLOCKS_STORED.label()), out);
        assertFalse(out.contains("aeron bytes sent"), out);

        bytes.reset();
        CountersCommand.print(manager, true, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("aeron bytes sent"));
    }

    @Test
    void shouldExplainAMissingDaemon() {
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final PrintStream original = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        final int code;
        try {
            code = KvidxCli.run("counters", "--dir=" + dir);
        } finally {
            System.setErr(original);
        }
        assertEquals(1, code);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("no counters at " + dir.resolve("default")
            .resolve("counters") + ": has a daemon run with this --dir and --cell?"), err.toString());
    }
}
