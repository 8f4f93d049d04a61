package io.kvidx.daemon.state;

import java.util.List;
import java.util.Map;

/**
 * Where a ZeroMQ ingest agent reads and records its publishers' progress: the cell's {@link PublisherProgress} file,
 * or its share of it when several agents record into it ({@link PublisherProgress#shares}).
 *
 * <p><b>Note:</b> each log has one writer, the ingest agent it was given to.
 */
public interface ProgressLog {
    /**
     * @return the recorded progress by endpoint (every publisher's, whichever agent recorded it).
     */
    Map<String, PublisherProgress.Entry> read();

    /**
     * Replaces this log's recorded progress.
     *
     * @param entries the progress of every publisher this log records.
     */
    void write(List<PublisherProgress.Entry> entries);
}
