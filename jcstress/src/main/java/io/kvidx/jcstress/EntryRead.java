package io.kvidx.jcstress;

/**
 * One lookup of a key's pods in a cell's index: the router's ({@link #REAL}) or a broken twin's re-implementation.
 *
 * <p><b>Note:</b> implementations are stateless; any thread may call them.
 */
@FunctionalInterface
public interface EntryRead {
    /** The router's lookup, {@code IndexReader.lookup}: seqlock-validated, bounded. */
    EntryRead REAL = (cell, key, out) -> cell.reader().lookup(key, out);

    /**
     * @param cell the cell.
     * @param key  block key.
     * @param out  four pod words, written (all zero when absent).
     * @return true when the key is in the index.
     */
    boolean lookup(Cell cell, long key, long[] out);
}
