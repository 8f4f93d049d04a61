package io.kvidx.jcstress;

import io.kvidx.client.index.IndexReader;

/**
 * One read of a pod table entry: the router's ({@link #REAL}) or a broken twin's re-implementation.
 *
 * <p><b>Note:</b> implementations are stateless; any thread may call them.
 */
@FunctionalInterface
public interface PodRead {
    /** The router's read, {@code IndexReader.pod}: seqlock-validated, bounded. */
    PodRead REAL = (cell, slot) -> cell.reader().pod(slot);

    /**
     * @param cell the cell.
     * @param slot pod slot.
     * @return the entry as read.
     */
    IndexReader.PodInfo read(Cell cell, int slot);
}
