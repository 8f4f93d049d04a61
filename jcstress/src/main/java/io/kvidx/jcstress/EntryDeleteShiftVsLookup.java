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
 * Entry delete and backward shift vs lookup ({@link EntryShiftRace}): the daemon deletes a key and shifts four
 * followers back inside an odd shard version while the router looks up the deleted key and the last follower. The
 * deleted key is seen held by its pod, then absent; the follower is found every time (bit 16 if not).
 */
@JCStressTest
@Outcome(id = "2", expect = ACCEPTABLE, desc = "only the state after the change (the reader came late)")
@Outcome(id = "3", expect = ACCEPTABLE, desc = "the state before the change, then the state after it")
@Outcome(id = "(10|11)", expect = ACCEPTABLE, desc = "a read gave up (writer descheduled), one after the change saw it")
@Outcome(id = "(40|41|42|43)", expect = ACCEPTABLE, desc = "the writer did not finish within the reader's bound")
@Outcome(id = "(8|9)", expect = FORBIDDEN, desc = "every read after the change gave up: a reader that gives up")
@Outcome(expect = FORBIDDEN, desc = "torn (4): deleted key, wrong pods; 16: moved key lost")
@State
public class EntryDeleteShiftVsLookup {
    private final EntryShiftRace race = new EntryShiftRace(EntryLanes.GENERAL);

    /** The writer actor. */
    @Actor
    public void writer() {
        race.delete();
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
