package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The seqlock of the shared files, as named steps: every version word that guards a change in place (a pod table
 * entry's seqlock and a shard's version, {@link IndexDescriptor#POD_SEQ_OFFSET} and
 * {@link IndexDescriptor#SHARD_VERSION_OFFSET}; a tier map region's version,
 * {@link io.kvidx.client.tiers.TierMapDescriptor#REGION_VERSION_OFFSET}) is written and read through these methods
 * and nowhere else (docs/index-layout.md, "Publication protocol").
 *
 * <p>Who writes: the version word has one writer at a time (the thread holding the shard's writer lock, the pod
 * table's monitor, the pod region's writer agent, or the repair before any writer starts). The version is even
 * while the data it guards is consistent and odd while that writer changes it; each change adds 2.
 *
 * <p>Publication order, writer:
 * <ol>
 *   <li>{@link #beginWrite}: load the version (plain: only this thread stores it), store {@code version + 1}
 *   (opaque), then a store-store fence, so that no store of the change is seen before the odd version;</li>
 *   <li>the change (plain or opaque stores);</li>
 *   <li>{@link #endWrite}: store {@code version + 2} (release), so that every store of the change is seen before
 *   the even version.</li>
 * </ol>
 * A repair that finds a change torn by a crash (the version left odd) either finishes it with {@link #endWrite} of
 * the odd version it found, or rebuilds the data between {@link #beginRepair} and {@link #endWrite}.
 *
 * <p>What readers do:
 * <ol>
 *   <li>{@link #beginRead}: load the version (acquire); when it {@link #isWriting is odd}, spin and retry;</li>
 *   <li>read the data (plain loads, with the acquire fences the data's own publication needs);</li>
 *   <li>{@link #validate}: load-load fence, load the version again (opaque); when it differs, the data may be torn:
 *   discard it and retry from 1.</li>
 * </ol>
 * A reader retries within its read bound only ({@link ReadWait}): it never waits without a bound and never answers
 * from an odd or moved version. {@link #beginReadUnchecked} and {@link #validateUnchecked} are the same steps
 * through plain loads and explicit fences, without the aligned handle's alignment check, for the hottest lookup.
 *
 * <p>Every step is a static method of a few bytecodes over a constant VarHandle: the JIT inlines it, and the code
 * it emits is the hand-written sequence's. No step allocates.
 *
 * <p><b>Note:</b> stateless and thread safe; the one-writer rule above is the callers'.
 */
public final class Seqlock {
    private static final VarHandle LONG = Layouts.LONG;
    /** Plain 64-bit loads without the alignment check: every version word is 8-byte aligned anyway. */
    private static final VarHandle UNCHECKED = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();

    private Seqlock() {
    }

    /**
     * Writer, step 1: makes the version odd (opaque store of version + 1) and fences, so that readers retry until
     * {@link #endWrite}. Only the version word's one writer calls it, with the version even.
     *
     * @param segment the mapped file.
     * @param offset  the version word's offset (8-byte aligned).
     * @return the odd version stored, for {@link #endWrite}.
     */
    public static long beginWrite(final MemorySegment segment, final long offset) {
        final long odd = (long) LONG.get(segment, offset) + 1;
        LONG.setOpaque(segment, offset, odd);
        VarHandle.storeStoreFence();
        return odd;
    }

    /**
     * Writer, last step: publishes the change with a release store of the next even version ({@code odd + 1}).
     * Also finishes a change a crash left torn, given the odd version found.
     *
     * @param segment the mapped file.
     * @param offset  the version word's offset.
     * @param odd     the odd version {@link #beginWrite} or {@link #beginRepair} returned (or a torn one found).
     */
    public static void endWrite(final MemorySegment segment, final long offset, final long odd) {
        LONG.setRelease(segment, offset, odd + 1);
    }

    /**
     * Repair, step 1: makes the version odd whatever state a crash left it in (an odd version stays as it is, an
     * even one becomes version + 1), with a release store and a store-store fence; end with {@link #endWrite}.
     *
     * @param segment the mapped file.
     * @param offset  the version word's offset.
     * @return the odd version stored.
     */
    public static long beginRepair(final MemorySegment segment, final long offset) {
        final long version = (long) LONG.get(segment, offset);
        final long odd = isWriting(version) ? version : version + 1;
        LONG.setRelease(segment, offset, odd);
        VarHandle.storeStoreFence();
        return odd;
    }

    /**
     * Reader, step 1: the version before the data (acquire load).
     *
     * @param segment the mapped file.
     * @param offset  the version word's offset (8-byte aligned).
     * @return the version; when {@link #isWriting} it, read nothing and retry.
     */
    public static long beginRead(final MemorySegment segment, final long offset) {
        return (long) LONG.getAcquire(segment, offset);
    }

    /**
     * @param version a version loaded by {@link #beginRead} (or by the writer).
     * @return true when it is odd: a writer is changing the data, or died while it did.
     */
    public static boolean isWriting(final long version) {
        return (version & 1) != 0;
    }

    /**
     * Reader, last step: a load-load fence, then the version again (opaque load).
     *
     * @param segment the mapped file.
     * @param offset  the version word's offset.
     * @param version the even version {@link #beginRead} returned.
     * @return true when it is unchanged: the data read in between is consistent; false: discard it and retry.
     */
    public static boolean validate(final MemorySegment segment, final long offset, final long version) {
        VarHandle.loadLoadFence();
        return (long) LONG.getOpaque(segment, offset) == version;
    }

    /**
     * {@link #beginRead} as a plain load without the alignment check, then an acquire fence: the same ordering.
     *
     * @param segment the mapped file.
     * @param offset  the version word's offset, 8-byte aligned (not checked).
     * @return the version.
     */
    public static long beginReadUnchecked(final MemorySegment segment, final long offset) {
        final long version = (long) UNCHECKED.get(segment, offset);
        VarHandle.acquireFence();
        return version;
    }

    /**
     * {@link #validate} with a plain load without the alignment check after the load-load fence.
     *
     * @param segment the mapped file.
     * @param offset  the version word's offset, 8-byte aligned (not checked).
     * @param version the even version {@link #beginReadUnchecked} returned.
     * @return true when it is unchanged.
     */
    public static boolean validateUnchecked(final MemorySegment segment, final long offset, final long version) {
        VarHandle.loadLoadFence();
        return (long) UNCHECKED.get(segment, offset) == version;
    }
}
