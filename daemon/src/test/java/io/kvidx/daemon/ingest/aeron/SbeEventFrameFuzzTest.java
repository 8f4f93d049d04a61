package io.kvidx.daemon.ingest.aeron;

import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.sbe.events.BlockStoredDecoder;
import io.kvidx.sbe.events.BlockStoredEncoder;
import io.kvidx.sbe.events.BooleanType;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderDecoder;
import io.kvidx.sbe.events.MessageHeaderEncoder;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Mutated real SBE events (a capture encoded by the same encoder KvEventPublisher uses): whatever
 * {@link SbeEventFrame} accepts, the generated decoder reads within the message's bytes.
 */
class SbeEventFrameFuzzTest {
    private static final byte[] SEED = seed();

    private static byte[] seed() {
        final Capture c = Capture.load("kv_event_lora.json");
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8192]);
        final BlockStoredEncoder e = new BlockStoredEncoder().wrapAndApplyHeader(b, 0, new MessageHeaderEncoder())
            .sequence(3).dpRank(0).blockSize(16).medium(Medium.GPU).hasParent(BooleanType.F).parentHash(0);
        final BlockStoredEncoder.BlocksEncoder blocks = e.blocksCount(c.blockHashes().length);
        for (final long h : c.blockHashes()) {
            blocks.next().hash(h);
        }
        final BlockStoredEncoder.TokensEncoder tokens = e.tokensCount(c.tokenIds().length);
        for (final int t : c.tokenIds()) {
            tokens.next().token(t);
        }
        e.putPodId("pod".getBytes(), 0, 3).putModel("m".getBytes(), 0, 1).putLoraName("Alice".getBytes(), 0, 5);
        return Arrays.copyOf(b.byteArray(), MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    @Property(tries = 2000)
    void shouldAcceptOnlyMessagesTheDecoderReadsInBounds(@ForAll("mutations") final byte[] message) {
        final SbeEventFrame frame = new SbeEventFrame();
        // The message sits in a larger buffer, as in an Aeron term: reading past its end would not throw.
        final byte[] term = Arrays.copyOf(message, message.length + 4096);
        final UnsafeBuffer buffer = new UnsafeBuffer(term);
        if (frame.check(buffer, 0, message.length) != SbeEventFrame.OK) {
            return;
        }
        if (frame.templateId() == BlockStoredDecoder.TEMPLATE_ID) {
            final BlockStoredDecoder d = new BlockStoredDecoder().wrapAndApplyHeader(buffer, 0,
                new MessageHeaderDecoder());
            final BlockStoredDecoder.BlocksDecoder blocks = d.blocks();
            while (blocks.hasNext()) {
                blocks.next().hash();
            }
            final BlockStoredDecoder.TokensDecoder tokens = d.tokens();
            while (tokens.hasNext()) {
                tokens.next().token();
            }
            d.skipPodId();
            d.skipModel();
            d.skipLoraName();
            assertEquals(message.length, d.limit());
        }
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
