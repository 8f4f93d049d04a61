package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.writer.WriterMessages;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The rule by which a standby relay drops, from a pod's held messages, what the stream already holds
 * ({@link RelayLeases#inStream}): by the stream's last message id (a lease's revision aside), else by the batch that id
 * names (every id ends with the pod's last batch), else, at a takeover, up to its own last clear.
 */
class RelayLeasesTest {
    private static final String POD = "10.0.0.7:8000";

    private static RelayMessage batch(final long sequence, final long fingerprint) {
        return new RelayMessage("s", POD + "/" + sequence + "/" + Long.toHexString(fingerprint),
            WriterMessages.VLLM_BATCH, sequence, fingerprint, new byte[1], 0, null);
    }

    private static RelayMessage clear(final long lastSequence, final long lastFingerprint) {
        return new RelayMessage("s", POD + "/" + WriterMessages.CLEAR_POD + "/" + lastSequence + "/"
            + Long.toHexString(lastFingerprint), WriterMessages.CLEAR_POD, -1, 0, new byte[1], 0, null);
    }

    @Test
    void shouldKeepEverythingWhenTheStreamHoldsNothingOfThePod() {
        assertEquals(0, RelayLeases.inStream(List.of(batch(1, 0xa1), batch(2, 0xa2)), null, true));
    }

    @Test
    void shouldDropThroughTheBatchTheStreamEndsWith() {
        final List<RelayMessage> held = List.of(batch(4, 0xa4), batch(5, 0xa5), batch(6, 0xa6));
        assertEquals(2, RelayLeases.inStream(held, POD + "/5/a5@3", false));
        assertEquals(3, RelayLeases.inStream(held, POD + "/6/a6", true));
    }

    @Test
    void shouldDropThroughTheBatchAHeartbeatOrControlMessageNames() {
        final List<RelayMessage> held = List.of(batch(4, 0xa4), batch(5, 0xa5), batch(6, 0xa6));
        assertEquals(2, RelayLeases.inStream(held, POD + "/hb/356012/5/a5@9", true));
        assertEquals(1, RelayLeases.inStream(held, POD + "/" + WriterMessages.REGISTER + "/4/a4@9", false));
    }

    @Test
    void shouldDropThroughAControlMessageOfTheSameId() {
        final List<RelayMessage> held = List.of(batch(5, 0xa5), clear(5, 0xa5), batch(0, 0xb0));
        assertEquals(2, RelayLeases.inStream(held, POD + "/" + WriterMessages.CLEAR_POD + "/5/a5@2", true));
    }

    @Test
    void shouldNotTakeARestartedEnginesBatchForTheOldOne() {
        final List<RelayMessage> held = List.of(batch(5, 0xb5), batch(6, 0xb6));
        assertEquals(0, RelayLeases.inStream(held, POD + "/5/a5@1", false));
    }

    @Test
    void shouldPublishFromItsOwnClearWhenItSawTheRestartElsewhere() {
        // The holder cleared after old batch 9, which this relay never saw; it cleared on finding the restart in the
        // engine's replay, then took the new run.
        final List<RelayMessage> held = List.of(batch(7, 0xa7), clear(-1, 0), batch(0, 0xb0), batch(1, 0xb1));
        final String holdersClear = POD + "/" + WriterMessages.CLEAR_POD + "/9/a9@4";
        assertEquals(1, RelayLeases.inStream(held, holdersClear, true));
        assertEquals(0, RelayLeases.inStream(held, holdersClear, false), "a standby keeps all until it knows");
        assertEquals(0, RelayLeases.inStream(List.of(batch(7, 0xa7)), holdersClear, true), "no clear: all of it");
    }

    @Test
    void shouldRefuseAnIdThatNamesNoBatch() {
        assertEquals(-1, RelayLeases.inStream(List.of(batch(1, 0xa1)), "not-an-id", true));
        assertEquals(-1, RelayLeases.inStream(List.of(batch(1, 0xa1)), POD + "/x/zz", true));
    }

    @Test
    void shouldStripTheLeaseRevision() {
        assertEquals(POD + "/5/a5", RelayLeases.baseId(POD + "/5/a5@12"));
        assertEquals(POD + "/5/a5", RelayLeases.baseId(POD + "/5/a5"));
    }
}
