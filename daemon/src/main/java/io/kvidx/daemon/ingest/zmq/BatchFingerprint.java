package io.kvidx.daemon.ingest.zmq;

import org.agrona.DirectBuffer;

import java.nio.ByteOrder;

/**
 * A 64-bit fingerprint of a batch's payload bytes. vLLM and SGLang keep in their replay buffer the very bytes they
 * published, so the batch a daemon applied last under sequence s and the engine's replayed batch s have the same
 * fingerprint exactly when they are the same batch; a restarted engine's batch s (another timestamp, other events)
 * has another one. Not cryptographic: it tells incarnations of one engine apart, it does not resist an adversary.
 *
 * <p><b>Note:</b> stateless; allocation-free.
 */
public final class BatchFingerprint {
    /** "No fingerprint": {@link #of} never returns it. */
    public static final long NONE = 0;

    private static final long P1 = 0x9E37_79B1_85EB_CA87L;
    private static final long P2 = 0xC2B2_AE3D_27D4_EB4FL;
    private static final long P3 = 0x1656_67B1_9E37_79F9L;

    private BatchFingerprint() {
    }

    /**
     * @param buffer bytes.
     * @param offset first byte.
     * @param length number of bytes.
     * @return the fingerprint, never {@link #NONE}.
     */
    public static long of(final DirectBuffer buffer, final int offset, final int length) {
        long h = P3 ^ length;
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            h = Long.rotateLeft(h ^ (buffer.getLong(offset + i, ByteOrder.LITTLE_ENDIAN) * P2), 31) * P1;
        }
        for (; i < length; i++) {
            h = Long.rotateLeft(h ^ ((buffer.getByte(offset + i) & 0xFFL) * P3), 11) * P1;
        }
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        h ^= h >>> 32;
        return h == NONE ? 1 : h;
    }
}
