package io.kvidx.daemon.cli;

import io.kvidx.client.index.IndexConfiguration;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/**
 * The {@code --dir} and {@code --cell} options of the commands that read a cell's shared files (a picocli mixin).
 */
final class CellOptions {
    @Option(names = "--dir", paramLabel = "D", description = "Index directory (default "
        + IndexConfiguration.DIR_DEFAULT + ").")
    private Path dir = Path.of(IndexConfiguration.DIR_DEFAULT);

    @Option(names = "--cell", paramLabel = "C", description = "Cell name (default "
        + IndexConfiguration.CELL_DEFAULT + ").")
    private String cell = IndexConfiguration.CELL_DEFAULT;

    /**
     * @return the index directory.
     */
    Path dir() {
        return dir;
    }

    /**
     * @return the cell name.
     */
    String cell() {
        return cell;
    }

    /**
     * @return the cell directory, {@code <dir>/<cell>}.
     */
    Path cellDirectory() {
        return IndexConfiguration.indexFile(dir, cell).getParent();
    }
}
