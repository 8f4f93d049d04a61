package io.kvidx.routing;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;

import java.nio.file.Path;

/**
 * Attaches to a cell's index as the user this process runs as and prints what a router sees, one line each:
 * {@code denied <exception class> <message>} (or {@code attached}), {@code cause <class>}, {@code available <bool>},
 * {@code failure <class>}. {@link IndexAccessTest} runs it as an unprivileged user when the test runs as root.
 */
public final class IndexAccessProbe {
    private IndexAccessProbe() {
    }

    /**
     * @param args index directory, cell.
     * @throws Exception never on the expected paths.
     */
    public static void main(final String[] args) throws Exception {
        final IndexReaderContext context =
            new IndexReaderContext().dir(Path.of(args[0])).cell(args[1]).attachTimeoutMs(0);
        try (IndexReader reader = IndexReader.attach(context)) {
            System.out.println("attached " + reader.maxPods());
        } catch (final RuntimeException ex) {
            System.out.println("denied " + ex.getClass().getName() + " " + ex.getMessage().replace('\n', ' '));
            System.out.println("cause " + (ex.getCause() == null ? "none" : ex.getCause().getClass().getName()));
        }
        try (IndexReaderPodIndex index = new IndexReaderPodIndex(context, 0)) {
            System.out.println("available " + index.isAvailable());
            final Throwable failure = index.attachFailure();
            System.out.println("failure " + (failure == null ? "none" : failure.getClass().getName()));
        }
    }
}
