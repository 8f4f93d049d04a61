package io.kvidx.daemon.ingest.vllm;

import io.kvidx.client.index.DataParallelRanks;
import org.agrona.DirectBuffer;

import java.nio.charset.StandardCharsets;

import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_ARRAY;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_INT;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_MAP;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_NIL;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_STR;

/**
 * Reads the data-parallel rank of a batch before its events are decoded, so that the transport can hand the batch
 * to the writer of the (pod, rank) it belongs to. The rank is the third element of the positional batch
 * {@code [ts, events, rank]} (vLLM's {@code data_parallel_rank}, SGLang's {@code attn_dp_rank}), or the entry
 * {@code data_parallel_rank} / {@code attn_dp_rank} of a map-shaped batch. The events are skipped, not decoded
 * (bounded and allocation-free, see {@link MsgpackCursor#skipValue()}).
 *
 * <p><b>Note:</b> not thread safe; one reader per transport thread.
 */
public final class BatchRankReader {
    /** No rank: nil, absent, or a batch too malformed to tell (its decoder reports it). */
    public static final int NO_RANK = -1;
    /** A rank of the wrong type, negative or above {@link DataParallelRanks#MAX_RANK}. */
    public static final int INVALID_RANK = -2;

    private static final byte[] K_DP_RANK = "data_parallel_rank".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] K_ATTN_DP_RANK = "attn_dp_rank".getBytes(StandardCharsets.US_ASCII);

    private final MsgpackCursor in = new MsgpackCursor();

    /**
     * @param buffer the payload's buffer.
     * @param offset first byte.
     * @param length payload length.
     * @return the rank (0..{@link DataParallelRanks#MAX_RANK}), {@link #NO_RANK} or {@link #INVALID_RANK}.
     */
    public int read(final DirectBuffer buffer, final int offset, final int length) {
        try {
            in.wrap(buffer, offset, length);
            final int outer = in.peekType();
            if (outer == TYPE_ARRAY) {
                final int n = in.readArrayHeader();
                if (n < 3) {
                    return NO_RANK;
                }
                in.skipValue();
                in.skipValue();
                return rank();
            }
            if (outer == TYPE_MAP) {
                final int n = in.readMapHeader();
                for (int i = 0; i < n; i++) {
                    if (in.peekType() == TYPE_STR) {
                        final int len = in.readRawHeader();
                        final boolean isRank = in.payloadEquals(len, K_DP_RANK)
                            || in.payloadEquals(len, K_ATTN_DP_RANK);
                        in.skipBytes(len);
                        if (isRank) {
                            return rank();
                        }
                    } else {
                        in.skipValue();
                    }
                    in.skipValue();
                }
            }
            return NO_RANK;
        } catch (final VllmDecodeException ex) {
            return NO_RANK;
        }
    }

    private int rank() {
        final int t = in.peekType();
        if (t == TYPE_NIL) {
            return NO_RANK;
        }
        if (t != TYPE_INT) {
            return INVALID_RANK;
        }
        final long v = in.readLong();
        // A uint64 above Long.MAX_VALUE reads negative: absurd too.
        return v < 0 || v > DataParallelRanks.MAX_RANK ? INVALID_RANK : (int) v;
    }
}
