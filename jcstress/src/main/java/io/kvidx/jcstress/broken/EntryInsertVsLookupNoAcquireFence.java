package io.kvidx.jcstress.broken;

import io.kvidx.jcstress.EntryInsertRace;
import io.kvidx.jcstress.EntryLanes;
import io.kvidx.jcstress.Seen;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Broken twin of {@link io.kvidx.jcstress.EntryInsertVsLookup}: the reader drops the acquire fence between the key
 * it found and the pods word ({@link BrokenReads#lookupNoAcquireFence}), loads still in program order. Expected to
 * show nothing on x86 (loads are not reordered with loads, and the pods load depends on the key's entry): the
 * fence matters on weakly ordered CPUs and against compilers, which this machine cannot demonstrate.
 */
@JCStressTest
@Outcome(id = "2", expect = ACCEPTABLE, desc = "only the state after the change (the reader came late)")
@Outcome(id = "3", expect = ACCEPTABLE, desc = "the state before the change, then the state after it")
@Outcome(id = "(10|11)", expect = ACCEPTABLE, desc = "a read gave up (writer descheduled), one after the change saw it")
@Outcome(id = "(40|41|42|43)", expect = ACCEPTABLE, desc = "the writer did not finish within the reader's bound")
@Outcome(id = "(8|9)", expect = FORBIDDEN, desc = "every read after the change gave up: a reader that gives up")
@Outcome(expect = ACCEPTABLE_INTERESTING, desc = "torn: the key without its pods word (x86: never)")
@State
public class EntryInsertVsLookupNoAcquireFence {
    private final EntryInsertRace race = new EntryInsertRace(EntryLanes.GENERAL);

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
        r.r1 = race.observe(BrokenReads::lookupNoAcquireFence);
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
