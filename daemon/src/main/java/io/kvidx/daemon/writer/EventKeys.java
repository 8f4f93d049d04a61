package io.kvidx.daemon.writer;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.keys.BlockExtras;
import io.kvidx.client.keys.ChainedXxh3Hasher;
import io.kvidx.client.keys.RequestExtras;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockExtraKeys;

import java.util.Arrays;

/**
 * Router keys of a BlockStored event's blocks (docs/keys.md), from its tokens, its parent's router key or the chain
 * seed, and its {@code extra_keys} (vllm#33304). A block's extra keys are vLLM's tuple
 * {@code lora_name? + multimodal keys + cache_salt? + embeds_digest?} (vLLM's {@code generate_block_hash_extra_keys});
 * they are read as:
 * <ul>
 *   <li>the LoRA adapter is the event's {@code lora_name}: when it has one, every block's extra keys that are not
 *   empty must start with a str equal to it (vLLM always puts it there; a nil entry is read as the LoRA alone, as
 *   from an engine that sends no extra keys);</li>
 *   <li>then any number of {@code [identifier, offset]} multimodal items, the offset relative to the block's first
 *   token and below the block size;</li>
 *   <li>then, on a chain's first block only (the event has no parent), a str: the cache salt, which goes into the
 *   chain seed with the model and LoRA name (an empty salt is none, as in vLLM);</li>
 *   <li>then a 32-byte bin: the block's prompt-embeds digest;</li>
 *   <li>nothing else (nil or an empty tuple: none of these).</li>
 * </ul>
 * Anything else is a bad value: the event is refused with one of the {@code BAD_*} codes and nothing is keyed. An
 * event without {@code extra_keys} is keyed as before their time (text keys, LoRA from {@code lora_name}, no salt),
 * except that an event-level cache salt (SGLang's {@code cache_salt}) seeds a chain's first block.
 *
 * <p><b>Note:</b> owned by one writer agent (its scratch is not shared).
 */
final class EventKeys {
    /** Keyed. */
    static final int OK = 0;
    /** The event names a LoRA adapter and a block's (non-empty) extra keys do not start with its name. */
    static final int BAD_LORA = 1;
    /** A str where none may be (after the items of a block that is not a chain's first). */
    static final int BAD_STRING = 2;
    /** A multimodal offset that cannot overlap the block. */
    static final int BAD_OFFSET = 3;
    /** A bin that is not a 32-byte digest. */
    static final int BAD_DIGEST = 4;
    /** Elements out of vLLM's order (e.g. an item after the salt, two digests). */
    static final int BAD_ORDER = 5;
    /** Another number of entries than blocks (the decoder refuses these already; kept for other transports). */
    static final int BAD_COUNT = 6;
    /** A multimodal item or prompt-embeds digest, which the cell's xxh3-chain key scheme cannot key. */
    static final int BAD_SCHEME = 7;

    private final RouterKeyHasher hasher;
    /** The cell's xxh3-chain hasher, or null when the cell is keyed by kvidx's router keys. */
    private final ChainedXxh3Hasher xxh3;
    private final BlockExtras extras = new BlockExtras();
    private int badBlock;
    private byte[] loraIdName = new byte[0];
    private long loraIdNameId = -1;

    EventKeys(final RouterKeyHasher hasher) {
        this(hasher, IndexDescriptor.KEY_SCHEME_ROUTER_V1);
    }

    /**
     * @param hasher    kvidx's router-key hasher (the cell's block size).
     * @param keyScheme the cell's key scheme.
     */
    EventKeys(final RouterKeyHasher hasher, final int keyScheme) {
        this.hasher = hasher;
        this.xxh3 = keyScheme == IndexDescriptor.KEY_SCHEME_XXH3_CHAIN ? new ChainedXxh3Hasher(hasher.blockSize())
            : null;
    }

    /**
     * Computes the router key of every block of the event into {@code out[0 .. hashCount)}.
     *
     * @param p         the pod (model, seed cache).
     * @param e         a BlockStored whose block size and token count were checked.
     * @param parentKey the parent's router key when the event has a parent.
     * @param out       receives the keys.
     * @return {@link #OK} or a {@code BAD_*} code (then {@link #badBlock()} names the block).
     */
    int keys(final PodState p, final BlockEvent e, final long parentKey, final long[] out) {
        if (xxh3 != null) {
            return xxh3Keys(e, parentKey, out);
        }
        final int n = e.hashCount();
        final int bs = hasher.blockSize();
        final int[] tokens = e.tokens();
        final BlockExtraKeys xk = e.extraKeys();
        if (!xk.present()) {
            // SGLang names the salt at event level, on every BlockStored of a salted chain: it seeds the chain's
            // first block only, as vLLM's salt does.
            final long seed = e.hasParent() ? parentKey : e.cacheSaltLength() > 0
                ? seed(p, e, e.cacheSaltBytes(), 0, e.cacheSaltLength()) : seed(p, e, null, 0, -1);
            hasher.extend(seed, tokens, 0, n * bs, out, 0);
            return OK;
        }
        if (xk.blockCount() != n) {
            badBlock = Math.min(n, xk.blockCount());
            return BAD_COUNT;
        }
        final byte[] x = xk.bytes();
        final boolean lora = e.hasLoraName();
        long parent = parentKey;
        for (int b = 0; b < n; b++) {
            badBlock = b;
            int j = xk.start(b);
            final int end = xk.end(b);
            if (lora && j < end) {
                if (xk.kind(j) != BlockExtraKeys.KIND_STR || !Arrays.equals(x, xk.offset(j),
                    xk.offset(j) + xk.length(j), e.loraNameBytes(), 0, e.loraNameLength())) {
                    return BAD_LORA;
                }
                j++;
            }
            final BlockExtras be = extras.clear();
            while (j < end && xk.kind(j) == BlockExtraKeys.KIND_MM) {
                final long rel = xk.value(j);
                if (rel >= bs || rel < Integer.MIN_VALUE) {
                    return BAD_OFFSET;
                }
                be.item(x, xk.offset(j), xk.length(j), (int) rel);
                j++;
            }
            int saltOff = 0;
            int saltLen = -1;
            if (j < end && xk.kind(j) == BlockExtraKeys.KIND_STR) {
                if (b != 0 || e.hasParent()) {
                    return BAD_STRING;
                }
                saltOff = xk.offset(j);
                saltLen = xk.length(j) == 0 ? -1 : xk.length(j);
                j++;
            }
            if (j < end && xk.kind(j) == BlockExtraKeys.KIND_BIN) {
                if (xk.length(j) != RequestExtras.EMBEDS_DIGEST_LENGTH) {
                    return BAD_DIGEST;
                }
                be.digest(x, xk.offset(j), xk.length(j));
                j++;
            }
            if (j < end) {
                return BAD_ORDER;
            }
            if (b == 0 && !e.hasParent()) {
                parent = seed(p, e, x, saltOff, saltLen);
            }
            parent = hasher.blockKey(parent, tokens, b * bs, be);
            out[b] = parent;
        }
        return OK;
    }

    /**
     * Keys in the cell's xxh3-chain scheme ({@link ChainedXxh3Hasher}): the LoRA adapter (its name, or
     * {@code lora-id:<id>} for vLLM's deprecated integer id) seeds every block's local hash, a cache salt (from the
     * first block's extra keys, or SGLang's event-level salt) the chain's first block; extra keys are checked as in
     * kvidx's scheme, and a block with a multimodal item or a prompt-embeds digest refuses the event
     * ({@link #BAD_SCHEME}).
     */
    private int xxh3Keys(final BlockEvent e, final long parentKey, final long[] out) {
        final int n = e.hashCount();
        final int bs = xxh3.blockSize();
        final int[] tokens = e.tokens();
        final long seed;
        if (e.hasLoraName()) {
            seed = ChainedXxh3Hasher.seed(e.loraNameBytes(), 0, e.loraNameLength());
        } else if (e.loraId() >= 0) {
            if (e.loraId() != loraIdNameId) {
                loraIdName = ("lora-id:" + e.loraId()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                loraIdNameId = e.loraId();
            }
            seed = ChainedXxh3Hasher.seed(loraIdName, 0, loraIdName.length);
        } else {
            seed = ChainedXxh3Hasher.SEED;
        }
        long firstSeed = e.cacheSaltLength() > 0
            ? ChainedXxh3Hasher.firstSeed(seed, e.cacheSaltBytes(), 0, e.cacheSaltLength()) : seed;
        final BlockExtraKeys xk = e.extraKeys();
        if (xk.present()) {
            if (xk.blockCount() != n) {
                badBlock = Math.min(n, xk.blockCount());
                return BAD_COUNT;
            }
            final byte[] x = xk.bytes();
            for (int b = 0; b < n; b++) {
                badBlock = b;
                int j = xk.start(b);
                final int end = xk.end(b);
                if (e.hasLoraName() && j < end) {
                    if (xk.kind(j) != BlockExtraKeys.KIND_STR || !Arrays.equals(x, xk.offset(j),
                        xk.offset(j) + xk.length(j), e.loraNameBytes(), 0, e.loraNameLength())) {
                        return BAD_LORA;
                    }
                    j++;
                }
                if (j < end && (xk.kind(j) == BlockExtraKeys.KIND_MM || xk.kind(j) == BlockExtraKeys.KIND_BIN)) {
                    return BAD_SCHEME;
                }
                if (j < end && xk.kind(j) == BlockExtraKeys.KIND_STR) {
                    if (b != 0 || e.hasParent()) {
                        return BAD_STRING;
                    }
                    firstSeed = ChainedXxh3Hasher.firstSeed(seed, x, xk.offset(j), xk.length(j));
                    j++;
                }
                if (j < end) {
                    return xk.kind(j) == BlockExtraKeys.KIND_MM || xk.kind(j) == BlockExtraKeys.KIND_BIN ? BAD_SCHEME
                        : BAD_ORDER;
                }
            }
        }
        long key = parentKey;
        for (int b = 0; b < n; b++) {
            final boolean first = b == 0 && !e.hasParent();
            final long local = xxh3.local(tokens, b * bs, first ? firstSeed : seed);
            key = first ? local : xxh3.chain(key, local);
            out[b] = key;
        }
        return OK;
    }

    /**
     * @return the block the last refused event was refused for.
     */
    int badBlock() {
        return badBlock;
    }

    /**
     * @param code a {@code BAD_*} code.
     * @return what it means.
     */
    static String describe(final int code) {
        return switch (code) {
            case BAD_LORA -> "does not start with the event's lora_name";
            case BAD_STRING -> "has a str where none may be (a cache salt only on a chain's first block, after its"
                + " multimodal items; multimodal items as [identifier, offset], not a bare identifier)";
            case BAD_OFFSET -> "has a multimodal offset that cannot overlap the block";
            case BAD_DIGEST -> "has a bin that is not a 32-byte prompt-embeds digest";
            case BAD_ORDER -> "has elements out of vLLM's order (LoRA name, items, salt, digest)";
            case BAD_COUNT -> "is missing or extra: extra_keys has another number of entries than block_hashes";
            case BAD_SCHEME -> "has a multimodal item or prompt-embeds digest, which the cell's xxh3-chain key scheme "
                + "cannot key (use the kvidx key scheme for multimodal models)";
            default -> "code " + code;
        };
    }

    private static long seed(final PodState p, final BlockEvent e, final byte[] salt, final int saltOff,
        final int saltLen) {
        if (!e.hasLoraName() && e.loraId() >= 0) {
            return saltLen < 0 ? p.seedForLoraId(e.loraId()) : p.seedForLoraId(e.loraId(), salt, saltOff, saltLen);
        }
        return p.seed(e.hasLoraName(), e.loraNameBytes(), e.loraNameLength(), salt, saltOff, saltLen);
    }
}
