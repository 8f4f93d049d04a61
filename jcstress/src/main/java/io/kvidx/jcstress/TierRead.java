package io.kvidx.jcstress;

/**
 * One tier map lookup: the router's ({@link #REAL}) or a broken twin's re-implementation.
 *
 * <p><b>Note:</b> implementations are stateless; any thread may call them.
 */
@FunctionalInterface
public interface TierRead {
    /** The router's lookup, {@code TierMapReader.tierBits}: seqlock-validated, bounded. */
    TierRead REAL = (cell, slot, generation, key) -> cell.tiers().tierBits(slot, generation, key);

    /**
     * @param cell       the cell.
     * @param slot       pod slot.
     * @param generation the slot's generation asked for.
     * @param key        router key.
     * @return the tier bits, or one of {@code TierMapReader}'s negative results.
     */
    int tierBits(Cell cell, int slot, int generation, long key);
}
