package io.kvidx.daemon.cli;

import io.kvidx.daemon.ops.ErrorLogFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.time.Instant;
import java.util.concurrent.Callable;

/**
 * {@code kvidx errors}: prints a cell's distinct error log: one line per problem (kind and pod), with how often it
 * happened and when first and last.
 */
@Command(name = "errors", mixinStandardHelpOptions = true,
    description = "Print a cell's distinct error log: count, first and last time, and the problem.")
public final class ErrorsCommand implements Callable<Integer> {
    @Mixin
    private CellOptions where = new CellOptions();

    @Override
    public Integer call() {
        final ErrorLogFile.Contents log = ErrorLogFile.read(where.cellDirectory());
        System.out.printf("daemon pid %d (%s): %d distinct problem(s)%n", log.pid(),
            log.alive() ? "running" : "not running", log.entries().size());
        for (final ErrorLogFile.Entry e : log.entries()) {
            System.out.printf("%8d x  first %s  last %s  %s%n", e.count(), Instant.ofEpochMilli(e.firstMs()),
                Instant.ofEpochMilli(e.lastMs()), e.description());
        }
        return 0;
    }
}
