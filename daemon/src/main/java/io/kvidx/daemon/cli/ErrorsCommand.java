package io.kvidx.daemon.cli;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.daemon.ops.ErrorLogFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.Callable;

/**
 * {@code kvidx errors}: prints a cell's distinct error log: one line per problem (kind and pod), with how often it
 * happened and when first and last.
 */
@Command(name = "errors", mixinStandardHelpOptions = true,
    description = "Print a cell's distinct error log: count, first and last time, and the problem.")
public final class ErrorsCommand implements Callable<Integer> {
    @Option(names = "--dir", paramLabel = "D", description = "Index directory (default "
        + IndexConfiguration.DIR_DEFAULT + ").")
    private Path dir = Path.of(IndexConfiguration.DIR_DEFAULT);

    @Option(names = "--cell", paramLabel = "C", description = "Cell name (default "
        + IndexConfiguration.CELL_DEFAULT + ").")
    private String cell = IndexConfiguration.CELL_DEFAULT;

    @Override
    public Integer call() {
        final ErrorLogFile.Contents log = ErrorLogFile.read(IndexConfiguration.indexFile(dir, cell).getParent());
        System.out.printf("daemon pid %d (%s): %d distinct problem(s)%n", log.pid(),
            log.alive() ? "running" : "not running", log.entries().size());
        for (final ErrorLogFile.Entry e : log.entries()) {
            System.out.printf("%8d x  first %s  last %s  %s%n", e.count(), Instant.ofEpochMilli(e.firstMs()),
                Instant.ofEpochMilli(e.lastMs()), e.description());
        }
        return 0;
    }
}
