package io.kvidx.jcstress;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * {@link EntryInsertVsLookup} in a direct cell (at most 64 pods): the pods word is a plain bitmap and the router's lookup takes its
 * separate direct path ({@code KeyLookup.direct}: plain loads ordered by explicit acquire and load-load fences).
 */
@JCStressTest
@Outcome(id = "2", expect = ACCEPTABLE, desc = "only the state after the change (the reader came late)")
@Outcome(id = "3", expect = ACCEPTABLE, desc = "the state before the change, then the state after it")
@Outcome(id = "(10|11)", expect = ACCEPTABLE, desc = "a read gave up (writer descheduled), one after the change saw it")
@Outcome(id = "(40|41|42|43)", expect = ACCEPTABLE, desc = "the writer did not finish within the reader's bound")
@Outcome(id = "(8|9)", expect = FORBIDDEN, desc = "every read after the change gave up: a reader that gives up")
@Outcome(expect = FORBIDDEN, desc = "torn: the key without its pod, or with another pod")
@State
public class EntryInsertVsLookupDirectCell {
    private final EntryInsertRace race = new EntryInsertRace(EntryLanes.DIRECT);

    /** The writer actor. */
    @Actor
    public void writer() {
        race.store();
    }

    /**
     * The reader actor.
     *
     * @param r what it saw ({@link Seen}).
     */
    @Actor
    public void reader(final I_Result r) {
        r.r1 = race.observe();
    }

    /**
     * Frees the lane.
     *
     * @param r unused.
     */
    @Arbiter
    public void reset(final I_Result r) {
        race.reset();
    }
}
