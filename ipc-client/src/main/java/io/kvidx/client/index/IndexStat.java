package io.kvidx.client.index;

import java.io.PrintStream;
import java.nio.file.Path;

/**
 * Prints what a reader sees in an index: header, geometry, fill, evictions and the pods. Runs with only the
 * ipc-client and native classes on the class path and no JVM flags, like a router:
 * {@code java -cp kvidx-ipc-client.jar:kvidx-native.jar io.kvidx.client.index.IndexStat [dir] [cell]}.
 */
public final class IndexStat {
    private IndexStat() {
    }

    /**
     * @param args optional index directory and cell.
     */
    public static void main(final String[] args) {
        final IndexReaderContext context = new IndexReaderContext().heartbeatTimeoutMs(0).attachTimeoutMs(0);
        if (args.length > 0) {
            context.dir(Path.of(args[0]));
        }
        if (args.length > 1) {
            context.cell(args[1]);
        }
        try (IndexReader reader = IndexReader.attach(context)) {
            print(reader, System.out);
        } catch (final IndexException ex) {
            System.err.println("kvidx: " + ex.getMessage());
            System.exit(1);
        }
    }

    /**
     * @param reader an attached reader.
     * @param out    where to print.
     */
    public static void print(final IndexReader reader, final PrintStream out) {
        out.printf("index %s%n", reader.path());
        out.printf("layout %s epoch %d writer-pid %d heartbeat-age-ms %d%n",
            IndexDescriptor.versionString(reader.layoutVersion()), reader.epoch(), reader.writerPid(),
            reader.heartbeatAgeMs());
        out.printf("geometry shards %d slots-per-shard %d max-pods %d max-chain %d block-size %d%n",
            reader.shardCount(), reader.slotsPerShard(), reader.maxPods(), reader.maxChainLength(),
            reader.blockSize());
        out.printf("entries %d evictions %d%n", reader.entryCount(), reader.evictions());
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            final IndexReader.PodInfo pod = reader.pod(slot);
            if (pod.state() != IndexDescriptor.POD_STATE_FREE) {
                out.printf("pod %d %s model=%s generation=%d %s%n", slot, pod.podId(), pod.model(),
                    pod.generation(), pod.state() == IndexDescriptor.POD_STATE_ALIVE ? "alive" : "draining");
            }
        }
    }
}
