package io.kvidx.jcstress;

import java.util.function.IntSupplier;

/**
 * Keeps a state's two actors in step: the reader announces itself and reads until the writer's change is done (then
 * once more); the writer waits for the reader's announcement before it changes anything.
 *
 * <p>Why: a writer's change (a store through the daemon's writer, a registration) and a read cost different times,
 * so with one read per actor call the faster actor would run ahead through jcstress's stride of states and the two
 * would overlap on the first few states only (measured: without the writer's wait, 99 % of states saw only the
 * state after the change). With the rendezvous each state gets reads before, during and after its change. The
 * result is the set of states the reader saw ({@link Seen}).
 *
 * <p><b>Note:</b> one per jcstress state, used by its writer actor ({@link #awaitReader}, {@link #done}) and its
 * reader actor ({@link #readWhileWriting}). Both waits are bounded: an actor that never comes (jcstress's own
 * checks, or the scheduler) costs about 50 ms, not a hang.
 */
public final class Rendezvous {
    /** Most spins or reads per wait: about 50 ms. */
    private static final int MAX_SPINS = 1 << 20;
    /** Most time the reads after the change may keep giving up before the reader reports what it saw. */
    private static final long FINAL_READS_NS = 200_000_000L;

    private volatile boolean readerArrived;
    private volatile boolean writerDone;

    /** The writer actor, before its change: waits until the reader is reading (bounded). */
    public void awaitReader() {
        for (int i = 0; i < MAX_SPINS && !readerArrived; i++) {
            Thread.onSpinWait();
        }
    }

    /** The writer actor, after its change. */
    public void done() {
        writerDone = true;
    }

    /**
     * The reader actor: announces itself, reads until the writer is done, then again until a read does not give up
     * (bounded): nothing changes the state any more, so a reader that works sees the state after the change, and one
     * that always gives up never does (its result is {@link Seen#GAVE_UP} alone, or with {@link Seen#BEFORE}).
     *
     * @param read one read, classified into {@link Seen}'s bits.
     * @return the union of what the reads saw, with {@link Seen#GAVE_UP} and {@link Seen#WRITER_LATE} when the writer
     * did not finish in time.
     */
    public int readWhileWriting(final IntSupplier read) {
        readerArrived = true;
        int seen = 0;
        for (int i = 0; i < MAX_SPINS; i++) {
            final boolean done = writerDone;
            final int one = read.getAsInt();
            seen |= one;
            if (done) {
                // Bounded in time too: a read that gives up has waited its read bound (50 us) each time.
                final long deadline = System.nanoTime() + FINAL_READS_NS;
                for (int j = 0; (one & Seen.GAVE_UP) != 0 && j < MAX_SPINS && System.nanoTime() < deadline; j++) {
                    final int again = read.getAsInt();
                    seen |= again;
                    if ((again & Seen.GAVE_UP) == 0) {
                        break;
                    }
                }
                return seen;
            }
        }
        return seen | Seen.GAVE_UP | Seen.WRITER_LATE;
    }
}
