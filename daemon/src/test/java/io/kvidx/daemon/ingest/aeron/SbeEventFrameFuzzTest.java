package io.kvidx.daemon.ingest.aeron;

import io.kvidx.daemon.fuzz.FuzzSeeds;
import io.kvidx.daemon.ingest.vllm.Capture;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.util.Arrays;


/**
 * Mutated real SBE events (a capture encoded by the same encoder KvEventPublisher uses): whatever
 * {@link SbeEventFrame} accepts, the generated decoder reads within the message's bytes.
 */
class SbeEventFrameFuzzTest {
    private static final byte[] SEED = seed();

    private static byte[] seed() {
        return FuzzSeeds.blockStored(Capture.load("kv_event_lora.json"), "Alice");
    }

    @Property(tries = 2000)
    void shouldAcceptOnlyMessagesTheDecoderReadsInBounds(@ForAll("mutations") final byte[] message) {
        // The message sits in a larger buffer, as in an Aeron term: reading past its end would not throw.
        SbeEventFrameJazzerTest.checkInBounds(message);
    }

    @Provide
    Arbitrary<byte[]> mutations() {
        return Arbitraries.integers().between(0, SEED.length - 1).list().ofMinSize(1).ofMaxSize(4)
            .flatMap(positions -> Arbitraries.bytes().array(byte[].class).ofSize(positions.size()).map(values -> {
                byte[] m = SEED.clone();
                for (int i = 0; i < positions.size(); i++) {
                    m[positions.get(i)] = values[i];
                }
                if ((values[0] & 3) == 0) {
                    m = Arrays.copyOf(m, positions.get(0));
                }
                return m;
            }));
    }
}
