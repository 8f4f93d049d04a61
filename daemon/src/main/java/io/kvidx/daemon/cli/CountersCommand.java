package io.kvidx.daemon.cli;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ops.CountersFile;
import org.agrona.concurrent.status.CountersReader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.util.concurrent.Callable;

/**
 * {@code kvidx counters}: prints a cell's counters, read-only, from the cell's counters file or, when the daemon
 * runs Aeron, from the media driver's CnC file the counters file names (the same data stock AeronStat shows).
 */
@Command(name = "counters", mixinStandardHelpOptions = true,
    description = "Print a cell's counters (from its counters file, or Aeron's CnC file when the daemon runs Aeron).")
public final class CountersCommand implements Callable<Integer> {
    @Mixin
    private CellOptions where = new CellOptions();

    @Option(names = "--all", description = "Also print Aeron's own counters (when the daemon runs Aeron).")
    private boolean all;

    @Override
    public Integer call() {
        try (CountersFile.Reader reader = CountersFile.open(where.cellDirectory())) {
            System.out.printf("daemon pid %d (%s)%s%n", reader.pid(), reader.alive() ? "running" : "not running",
                reader.aeronDir() == null ? "" : ", counters in Aeron's CnC file in " + reader.aeronDir());
            print(reader.counters(), all, System.out);
        }
        return 0;
    }

    static void print(final CountersReader reader, final boolean all, final PrintStream out) {
        reader.forEach((counterId, typeId, keyBuffer, label) -> {
            if (all || CounterType.isKvidx(typeId)) {
                out.printf("%3d: %,20d - %s%n", counterId, reader.getCounterValue(counterId), label);
            }
        });
    }
}
