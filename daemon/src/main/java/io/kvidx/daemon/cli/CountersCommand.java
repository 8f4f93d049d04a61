package io.kvidx.daemon.cli;

import io.aeron.CncFileDescriptor;
import io.kvidx.daemon.counters.CounterType;
import org.agrona.DirectBuffer;
import org.agrona.IoUtil;
import org.agrona.concurrent.status.CountersReader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.File;
import java.io.PrintStream;
import java.nio.MappedByteBuffer;
import java.util.concurrent.Callable;

/**
 * {@code kvidx counters}: prints a running daemon's counters from the Aeron CnC file, the same data stock
 * AeronStat shows, without needing the aeron-all jar. Only for a daemon started with Aeron ({@code --aeron}).
 */
@Command(name = "counters", mixinStandardHelpOptions = true,
    description = "Print the counters of a daemon running with Aeron (read from its CnC file).")
public final class CountersCommand implements Callable<Integer> {
    @Option(names = "--aeron-dir", description = "Aeron directory (default /dev/shm/kvidx-aeron-<cell>).")
    private File aeronDir;

    @Option(names = "--cell", defaultValue = "default", description = "Cell name (default ${DEFAULT-VALUE}).")
    private String cell;

    @Option(names = "--all", description = "Also print Aeron's own counters.")
    private boolean all;

    @Override
    public Integer call() {
        final File dir = aeronDir != null ? aeronDir : new File("/dev/shm/kvidx-aeron-" + cell);
        final File cnc = new File(dir, CncFileDescriptor.CNC_FILE);
        if (!cnc.isFile()) {
            throw new IllegalArgumentException("no Aeron CnC file at " + cnc
                + ": is a daemon running with --aeron (and this --aeron-dir / --cell)?");
        }
        final MappedByteBuffer buffer = IoUtil.mapExistingFile(cnc, "cnc");
        try {
            final DirectBuffer meta = CncFileDescriptor.createMetaDataBuffer(buffer);
            final int version = meta.getInt(CncFileDescriptor.cncVersionOffset(0));
            if (version == 0) {
                throw new IllegalStateException("CnC file " + cnc + " is not initialised yet");
            }
            final CountersReader reader = new CountersReader(
                CncFileDescriptor.createCountersMetaDataBuffer(buffer, meta),
                CncFileDescriptor.createCountersValuesBuffer(buffer, meta));
            print(reader, all, System.out);
        } finally {
            IoUtil.unmap(buffer);
        }
        return 0;
    }

    static void print(final CountersReader reader, final boolean all, final PrintStream out) {
        final int first = CounterType.values()[0].typeId();
        final int last = CounterType.values()[CounterType.values().length - 1].typeId();
        reader.forEach((counterId, typeId, keyBuffer, label) -> {
            if (all || (typeId >= first && typeId <= last)) {
                out.printf("%3d: %,20d - %s%n", counterId, reader.getCounterValue(counterId), label);
            }
        });
    }
}
