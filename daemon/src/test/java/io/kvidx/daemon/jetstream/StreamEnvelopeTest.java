package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.writer.WriterMessages;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The stream envelope's layout, byte by byte, and its reader's checks (every truncation and every byte flipped give
 * a typed answer, never an exception); the subject token encoding (round trip, no reserved characters, injective on
 * pod ids and models that differ only where the encoding escapes).
 */
class StreamEnvelopeTest {
    private static final byte[] POD = "10.0.0.7:8000".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MODEL = "Qwen/Qwen3-0.6B".getBytes(StandardCharsets.UTF_8);

    private static byte[] envelope(final int type, final long seq, final long fp, final byte[] model,
        final byte[] payload) {
        final byte[] out = new byte[StreamEnvelope.length(POD, model, payload.length)];
        final int n = StreamEnvelope.encode(new UnsafeBuffer(out), 0, type, seq, fp, POD, model,
            new UnsafeBuffer(payload), 0, payload.length);
        assertEquals(out.length, n);
        return out;
    }

    @Test
    void shouldPinEveryOffset() {
        final byte[] e = envelope(WriterMessages.VLLM_BATCH, 0x0102030405060708L, 0x1112131415161718L, MODEL,
            new byte[] {(byte) 0xAA, (byte) 0xBB});
        final UnsafeBuffer b = new UnsafeBuffer(e);
        assertEquals(24, StreamEnvelope.HEADER_LENGTH);
        assertEquals(1, e[0]);
        assertEquals(0, e[1]);
        assertEquals(WriterMessages.VLLM_BATCH, b.getShort(2, ByteOrder.LITTLE_ENDIAN));
        assertEquals(POD.length, b.getShort(4, ByteOrder.LITTLE_ENDIAN));
        assertEquals(MODEL.length, b.getShort(6, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x0102030405060708L, b.getLong(8, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x1112131415161718L, b.getLong(16, ByteOrder.LITTLE_ENDIAN));
        assertEquals("10.0.0.7:8000", b.getStringWithoutLengthAscii(24, POD.length));
        assertEquals("Qwen/Qwen3-0.6B", b.getStringWithoutLengthUtf8(24 + POD.length, MODEL.length));
        assertEquals((byte) 0xAA, e[24 + POD.length + MODEL.length]);
        assertEquals(24 + POD.length + MODEL.length + 2, e.length);

        final StreamEnvelope r = new StreamEnvelope();
        assertEquals(StreamEnvelope.OK, r.wrap(b, 0, e.length));
        assertEquals(WriterMessages.VLLM_BATCH, r.type());
        assertEquals("10.0.0.7:8000", r.podId());
        assertEquals("Qwen/Qwen3-0.6B", r.model());
        assertEquals(24 + POD.length + MODEL.length, r.payloadOffset());
        assertEquals(2, r.payloadLength());
    }

    @Test
    void shouldCarryNoModelAndNoPayload() {
        final byte[] e = envelope(WriterMessages.CLEAR_POD, -1, 0, null, new byte[0]);
        assertEquals(0xFFFF, new UnsafeBuffer(e).getShort(6, ByteOrder.LITTLE_ENDIAN) & 0xFFFF);
        final StreamEnvelope r = new StreamEnvelope();
        assertEquals(StreamEnvelope.OK, r.wrap(new UnsafeBuffer(e), 0, e.length));
        assertNull(r.model());
        assertEquals(-1, r.sequence());
        assertEquals(0, r.payloadLength());
    }

    @Test
    void shouldRefuseAnotherMajorAnUnknownTypeABadPodAndEveryTruncation() {
        final byte[] good = envelope(WriterMessages.SBE_EVENT, 5, 9, MODEL, new byte[] {1, 2, 3});
        final StreamEnvelope r = new StreamEnvelope();
        final byte[] major = good.clone();
        major[0] = 2;
        assertEquals(StreamEnvelope.VERSION, r.wrap(new UnsafeBuffer(major), 0, major.length));
        final byte[] type = good.clone();
        type[2] = 99;
        assertEquals(StreamEnvelope.UNKNOWN_TYPE, r.wrap(new UnsafeBuffer(type), 0, type.length));
        final byte[] pod = good.clone();
        pod[24] = '/';
        assertEquals(StreamEnvelope.BAD_STRING, r.wrap(new UnsafeBuffer(pod), 0, pod.length));
        for (int n = 0; n < 24 + POD.length + MODEL.length; n++) {
            assertEquals(StreamEnvelope.TRUNCATED, r.wrap(new UnsafeBuffer(good), 0, n), "length " + n);
        }
        final SplittableRandom random = new SplittableRandom(3);
        for (int i = 0; i < 20_000; i++) {
            final byte[] m = good.clone();
            m[random.nextInt(m.length)] = (byte) random.nextInt(256);
            final int check = r.wrap(new UnsafeBuffer(m), 0, random.nextInt(m.length + 1));
            if (check == StreamEnvelope.OK) {
                assertTrue(r.payloadLength() >= 0 && r.podId() != null, "a well-formed envelope reads back");
            }
        }
    }

    @Test
    void shouldEncodeSubjectTokensInjectively() {
        assertEquals("10~2E0~2E0~2E7~3A8000", StreamSubjects.token("10.0.0.7:8000"));
        assertEquals("kvidx.events.Qwen~2FQwen3-0~2E6B.pod-a_1", StreamSubjects.subject("kvidx.events",
            "Qwen/Qwen3-0.6B", "pod-a_1"));
        assertEquals("kvidx.events.~.p", StreamSubjects.subject("kvidx.events", null, "p"));
        assertEquals("kvidx.events.>", StreamSubjects.filter("kvidx.events"));
        final String[] texts = {"a.b", "a~2Eb", "a:b", "a b", "a*b", "a>b", "é", "~", "a#1", "model/with/slashes"};
        for (final String t : texts) {
            final String token = StreamSubjects.token(t);
            assertTrue(token.matches("[A-Za-z0-9_~-]+"), token);
            assertEquals(t, StreamSubjects.decode(token));
            for (final String u : texts) {
                assertEquals(t.equals(u), token.equals(StreamSubjects.token(u)), t + " vs " + u);
            }
        }
        assertThrows(IllegalArgumentException.class, () -> StreamSubjects.decode("a~2"));
        assertThrows(IllegalArgumentException.class, () -> StreamSubjects.decode("a.b"));
        assertThrows(IllegalArgumentException.class, () -> StreamSubjects.decode("a~2e"));
    }
}
