package io.kvidx.daemon.ingest.vllm;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;

/**
 * Builds real vLLM event batches with msgpack-core (an encoder independent of the decoder under test), in both
 * event generations.
 */
public final class VllmPayloads {
    /** Event shapes. */
    public enum Shape {
        /** Tagged positional arrays (vLLM before mid-2026). */
        ARRAY,
        /** Maps with the tag under "type". */
        MAP
    }

    /** Hash encodings. */
    public enum HashWidth {
        /** uint64 (0xcf) for values >= 2^63, smallest int otherwise. */
        UINT64,
        /** Always int64 (0xd3). */
        INT64,
        /** 32-byte bin with the value in the last 8 bytes. */
        BIN32
    }

    private final MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
    private final Shape shape;
    private final HashWidth width;
    private int events;
    private final MessageBufferPacker body = MessagePack.newDefaultBufferPacker();

    /**
     * @param shape event shape.
     * @param width hash encoding.
     */
    public VllmPayloads(final Shape shape, final HashWidth width) {
        this.shape = shape;
        this.width = width;
    }

    /**
     * Adds a BlockStored.
     *
     * @param hashes    engine hashes.
     * @param parent    parent hash or null.
     * @param tokens    token ids.
     * @param blockSize block size.
     * @param loraName  LoRA name or null.
     * @param medium    medium or null.
     * @return this.
     */
    public VllmPayloads stored(final long[] hashes, final Long parent, final int[] tokens, final int blockSize,
        final String loraName, final String medium) {
        try {
            if (shape == Shape.ARRAY) {
                final int n = loraName != null ? 8 : medium != null ? 7 : 5;
                body.packArrayHeader(n);
                body.packString("BlockStored");
                packHashes(hashes);
                packParent(parent);
                packTokens(tokens);
                body.packInt(blockSize);
                if (n > 5) {
                    body.packNil();
                    packNullableString(medium);
                }
                if (n > 7) {
                    packNullableString(loraName);
                }
            } else {
                final int n = 5 + (medium != null ? 1 : 0) + (loraName != null ? 1 : 0) + 2;
                body.packMapHeader(n);
                body.packString("type").packString("BlockStored");
                body.packString("block_hashes");
                packHashes(hashes);
                body.packString("parent_block_hash");
                packParent(parent);
                body.packString("token_ids");
                packTokens(tokens);
                body.packString("block_size").packInt(blockSize);
                if (medium != null) {
                    body.packString("medium").packString(medium);
                }
                if (loraName != null) {
                    body.packString("lora_name").packString(loraName);
                }
                // Newer fields the decoder must ignore or accept.
                body.packString("extra_keys").packArrayHeader(hashes.length);
                for (int i = 0; i < hashes.length; i++) {
                    body.packNil();
                }
                body.packString("kv_cache_spec_kind").packString("full_attention");
            }
            events++;
            return this;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Adds a BlockStored with {@code extra_keys} (vllm#33304), in this builder's shape (the legacy array puts it
     * after {@code lora_name}). {@code extraKeys} is packed as given: a {@link List} or {@code Object[]} is an
     * array, a String a str, a byte[] a bin, an Integer or Long an int, a Double a float, a {@link java.util.Map} a
     * map and null nil; a well-formed value is one list per block of elements {@code "lora"}, {@code
     * new Object[] {"id", offset}}, {@code "salt"}, {@code digest32}.
     *
     * @param hashes    engine hashes.
     * @param parent    parent hash or null.
     * @param tokens    token ids.
     * @param blockSize block size.
     * @param loraName  LoRA name or null.
     * @param extraKeys the extra_keys value.
     * @return this.
     */
    public VllmPayloads storedWithExtraKeys(final long[] hashes, final Long parent, final int[] tokens,
        final int blockSize, final String loraName, final Object extraKeys) {
        try {
            if (shape == Shape.ARRAY) {
                body.packArrayHeader(10);
                body.packString("BlockStored");
                packHashes(hashes);
                packParent(parent);
                packTokens(tokens);
                body.packInt(blockSize);
                body.packNil();
                body.packString("GPU");
                packNullableString(loraName);
                pack(extraKeys);
                body.packInt(0);
            } else {
                body.packMapHeader(loraName != null ? 9 : 8);
                body.packString("type").packString("BlockStored");
                body.packString("block_hashes");
                packHashes(hashes);
                body.packString("parent_block_hash");
                packParent(parent);
                body.packString("token_ids");
                packTokens(tokens);
                body.packString("block_size").packInt(blockSize);
                body.packString("medium").packString("GPU");
                if (loraName != null) {
                    body.packString("lora_name").packString(loraName);
                }
                body.packString("extra_keys");
                pack(extraKeys);
                body.packString("group_idx").packInt(0);
            }
            events++;
            return this;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private void pack(final Object v) throws IOException {
        if (v == null) {
            body.packNil();
        } else if (v instanceof String str) {
            body.packString(str);
        } else if (v instanceof byte[] b) {
            body.packBinaryHeader(b.length);
            body.addPayload(b);
        } else if (v instanceof Integer i) {
            body.packInt(i);
        } else if (v instanceof Long l) {
            body.packLong(l);
        } else if (v instanceof BigInteger big) {
            body.packBigInteger(big);
        } else if (v instanceof Double d) {
            body.packDouble(d);
        } else if (v instanceof Boolean b) {
            body.packBoolean(b);
        } else if (v instanceof java.util.Map<?, ?> m) {
            body.packMapHeader(m.size());
            for (final var en : m.entrySet()) {
                pack(en.getKey());
                pack(en.getValue());
            }
        } else if (v instanceof Object[] a) {
            pack(java.util.Arrays.asList(a));
        } else if (v instanceof java.util.List<?> list) {
            body.packArrayHeader(list.size());
            for (final Object o : list) {
                pack(o);
            }
        } else {
            throw new IllegalArgumentException("cannot pack " + v.getClass());
        }
    }

    /**
     * Adds a legacy BlockStored (tagged array) whose LoRA adapter is named only by the deprecated integer id.
     *
     * @param hashes    engine hashes.
     * @param tokens    token ids.
     * @param blockSize block size.
     * @param loraId    LoRA id.
     * @return this.
     */
    public VllmPayloads storedWithLoraId(final long[] hashes, final int[] tokens, final int blockSize,
        final int loraId) {
        try {
            body.packArrayHeader(6);
            body.packString("BlockStored");
            packHashes(hashes);
            packParent(null);
            packTokens(tokens);
            body.packInt(blockSize);
            body.packInt(loraId);
            events++;
            return this;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Adds a BlockRemoved.
     *
     * @param hashes engine hashes.
     * @param medium medium or null.
     * @return this.
     */
    public VllmPayloads removed(final long[] hashes, final String medium) {
        try {
            if (shape == Shape.ARRAY) {
                body.packArrayHeader(medium != null ? 3 : 2);
                body.packString("BlockRemoved");
                packHashes(hashes);
                if (medium != null) {
                    body.packString(medium);
                }
            } else {
                body.packMapHeader(medium != null ? 3 : 2);
                body.packString("type").packString("BlockRemoved");
                body.packString("block_hashes");
                packHashes(hashes);
                if (medium != null) {
                    body.packString("medium").packString(medium);
                }
            }
            events++;
            return this;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Adds an AllBlocksCleared.
     *
     * @return this.
     */
    public VllmPayloads cleared() {
        try {
            if (shape == Shape.ARRAY) {
                body.packArrayHeader(1).packString("AllBlocksCleared");
            } else {
                body.packMapHeader(1).packString("type").packString("AllBlocksCleared");
            }
            events++;
            return this;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Adds an event of a type the decoder does not know.
     *
     * @return this.
     */
    public VllmPayloads unknown() {
        try {
            if (shape == Shape.ARRAY) {
                body.packArrayHeader(2).packString("BlockPinned").packInt(7);
            } else {
                body.packMapHeader(2).packString("type").packString("BlockPinned").packString("x").packInt(7);
            }
            events++;
            return this;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * @param dpRank data-parallel rank, or null for nil.
     * @return the batch {@code [ts, [events], dp_rank]}.
     */
    public byte[] batch(final Integer dpRank) {
        try {
            p.clear();
            p.packArrayHeader(3);
            p.packDouble(1_763_800_000.25);
            p.packArrayHeader(events);
            p.addPayload(body.toByteArray());
            if (dpRank == null) {
                p.packNil();
            } else {
                p.packInt(dpRank);
            }
            return p.toByteArray();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * @return the batch as a map {ts, events} without a dp rank.
     */
    public byte[] mapBatch() {
        try {
            p.clear();
            p.packMapHeader(2);
            p.packString("events").packArrayHeader(events);
            p.addPayload(body.toByteArray());
            p.packString("ts").packDouble(1.5);
            return p.toByteArray();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private void packHashes(final long[] hashes) throws IOException {
        body.packArrayHeader(hashes.length);
        for (final long h : hashes) {
            switch (width) {
                case UINT64 -> {
                    if (h < 0) {
                        body.packBigInteger(new BigInteger(Long.toUnsignedString(h)));
                    } else {
                        body.packLong(h);
                    }
                }
                case INT64 -> body.addPayload(ByteBuffer.allocate(9).put((byte) 0xd3).putLong(h).array());
                default -> {
                    final byte[] digest = new byte[32];
                    for (int i = 0; i < 24; i++) {
                        digest[i] = (byte) (i * 31 + 7);
                    }
                    ByteBuffer.wrap(digest).putLong(24, h);
                    body.packBinaryHeader(32);
                    body.addPayload(digest);
                }
            }
        }
    }

    private void packParent(final Long parent) throws IOException {
        if (parent == null) {
            body.packNil();
        } else {
            body.packBigInteger(new BigInteger(Long.toUnsignedString(parent)));
        }
    }

    private void packTokens(final int[] tokens) throws IOException {
        body.packArrayHeader(tokens.length);
        for (final int t : tokens) {
            body.packInt(t);
        }
    }

    private void packNullableString(final String s) throws IOException {
        if (s == null) {
            body.packNil();
        } else {
            body.packString(s);
        }
    }
}
