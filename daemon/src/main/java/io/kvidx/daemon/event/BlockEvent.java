package io.kvidx.daemon.event;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One decoded KV block event (BlockStored, BlockRemoved, AllBlocksCleared), whatever the engine and the wire: a
 * reusable view filled by an {@link EventDecoder} (vLLM's or SGLang's msgpack batches, kvidx's SBE events) and valid
 * only during the {@link BlockEventListener} callback. The fields are vLLM's (the richest format); decoders of other
 * formats fill what they carry and leave the rest at the defaults {@link #prepare} sets. Arrays grow to the largest
 * event seen and are then reused: decoding allocates nothing per block. A BlockStored's {@code extra_keys} are held by
 * its {@link BlockExtraKeys} part ({@link #extraKeys()}).
 *
 * <p><b>Note:</b> not thread safe; owned by one decoder.
 */
public final class BlockEvent {
    /** Event type not recognised (or missing). */
    public static final int TYPE_UNKNOWN = 0;
    /** BlockStored. */
    public static final int TYPE_BLOCK_STORED = 1;
    /** BlockRemoved. */
    public static final int TYPE_BLOCK_REMOVED = 2;
    /** AllBlocksCleared. */
    public static final int TYPE_ALL_BLOCKS_CLEARED = 3;

    /** Medium absent (vLLM's default: GPU). */
    public static final int MEDIUM_DEFAULT = 0;
    /** "GPU". */
    public static final int MEDIUM_GPU = 1;
    /** "CPU". */
    public static final int MEDIUM_CPU = 2;
    /** "DISK". */
    public static final int MEDIUM_DISK = 3;
    /** Any other medium string (counted as an unknown medium). */
    public static final int MEDIUM_OTHER = 4;

    /** No {@code kv_cache_spec_kind} (engines before vllm#40984, and every BlockRemoved). */
    public static final int SPEC_KIND_ABSENT = 0;
    /** A full-attention kind: {@code full_attention}, {@code mla_attention} or {@code sink_full_attention}. */
    public static final int SPEC_KIND_FULL_ATTENTION = 1;
    /** Any other kind ({@code sliding_window}, {@code mamba}, {@code chunked_local_attention}, ...). */
    public static final int SPEC_KIND_OTHER = 2;
    /** Locality absent (vLLM: unspecified, never inferred; kvidx treats the copy as the pod's own). */
    public static final int LOCALITY_UNSPECIFIED = 0;
    /** "LOCAL": the storage is local to the publishing instance. */
    public static final int LOCALITY_LOCAL = 1;
    /** "REMOTE": the storage is not local to the publishing instance. */
    public static final int LOCALITY_REMOTE = 2;

    /** Field flag: the medium was a string kvidx does not know (kept as {@link #MEDIUM_OTHER}). */
    public static final int FLAG_UNKNOWN_MEDIUM = 1;
    /** Field flag: the locality was not a string, or an unknown one (defaulted to unspecified). */
    public static final int FLAG_BAD_LOCALITY = 2;

    /** No problem. */
    public static final int PROBLEM_NONE = 0;
    /** A block hash was neither an integer nor a bin of 8, 16 or 32 bytes. */
    public static final int PROBLEM_HASH_WIDTH = 1;
    /** A known field had a value of the wrong msgpack type. */
    public static final int PROBLEM_FIELD_TYPE = 2;
    /** More hashes or tokens than the decoder's limits allow. */
    public static final int PROBLEM_TOO_LARGE = 3;
    /** The event type tag is missing or unknown. */
    public static final int PROBLEM_UNKNOWN_TYPE = 4;
    /** The event is neither an array nor a map. */
    public static final int PROBLEM_EVENT_SHAPE = 5;
    /** A token id does not fit in 32 bits. */
    public static final int PROBLEM_TOKEN_RANGE = 6;
    /** {@code extra_keys} is not an array of arrays or nils, or an element is neither str, bin nor [str, int]. */
    public static final int PROBLEM_EXTRA_KEYS_TYPE = 7;
    /** {@code extra_keys} has another number of entries than {@code block_hashes}. */
    public static final int PROBLEM_EXTRA_KEYS_LENGTH = 8;
    /** {@code extra_keys} has more elements or bytes than the decoder's limits allow. */
    public static final int PROBLEM_EXTRA_KEYS_TOO_LARGE = 9;

    private int type;
    private int problem;
    private long[] hashes = new long[64];
    private int hashCount;
    private boolean hasParent;
    private long parentHash;
    private int[] tokens = new int[1024];
    private int tokenCount;
    private int blockSize;
    private long loraId;
    private int medium;
    private byte[] loraName = new byte[64];
    private int loraNameLength;
    private int groupIdx;
    private int specKind;
    private byte[] cacheSalt = new byte[32];
    private int cacheSaltLength = -1;
    private int locality;
    private int flags;
    /** The BlockStored's {@code extra_keys}. */
    private final BlockExtraKeys extraKeys = new BlockExtraKeys();

    private void reset() {
        type = TYPE_UNKNOWN;
        problem = PROBLEM_NONE;
        hashCount = 0;
        hasParent = false;
        parentHash = 0;
        tokenCount = 0;
        blockSize = -1;
        loraId = -1;
        medium = MEDIUM_DEFAULT;
        loraNameLength = -1;
        groupIdx = 0;
        specKind = SPEC_KIND_ABSENT;
        cacheSaltLength = -1;
        locality = LOCALITY_UNSPECIFIED;
        flags = 0;
        extraKeys.reset();
    }

    /**
     * Starts filling this view from another transport (e.g. SBE) so that the same appliers serve it.
     *
     * @param type a {@code TYPE_*} value.
     * @return this.
     */
    public BlockEvent prepare(final int type) {
        reset();
        this.type = type;
        return this;
    }

    /**
     * @param n number of block hashes.
     * @return the hash array to fill (length at least n); the hash count is set to n.
     */
    public long[] hashesForWrite(final int n) {
        if (hashes.length < n) {
            hashes = Arrays.copyOf(hashes, Math.max(n, hashes.length * 2));
        }
        hashCount = n;
        return hashes;
    }

    /**
     * @param n number of token ids.
     * @return the token array to fill (length at least n); the token count is set to n.
     */
    public int[] tokensForWrite(final int n) {
        if (tokens.length < n) {
            tokens = Arrays.copyOf(tokens, Math.max(n, tokens.length * 2));
        }
        tokenCount = n;
        return tokens;
    }

    /**
     * @param length LoRA name length in UTF-8 bytes, or -1 for none.
     * @return the array to fill with the name.
     */
    public byte[] loraNameForWrite(final int length) {
        if (loraName.length < length) {
            loraName = Arrays.copyOf(loraName, Math.max(length, loraName.length * 2));
        }
        loraNameLength = length;
        return loraName;
    }

    /**
     * @param has    true when the first block has a parent.
     * @param parent the parent's engine hash.
     * @param size   block size.
     * @param where  one of {@code MEDIUM_*}.
     * @return this.
     */
    public BlockEvent attributes(final boolean has, final long parent, final int size, final int where) {
        this.hasParent = has;
        this.parentHash = parent;
        this.blockSize = size;
        this.medium = where;
        return this;
    }

    /**
     * @return one of {@code TYPE_*}.
     */
    public int type() {
        return type;
    }

    /**
     * @return one of {@code PROBLEM_*}; events with a problem are delivered to
     *     {@link BlockEventListener#onDropped(BlockEvent)} only.
     */
    public int problem() {
        return problem;
    }

    /**
     * @return block hashes (engine hashes, 64 bits each); valid up to {@link #hashCount()}.
     */
    public long[] hashes() {
        return hashes;
    }

    /**
     * @return number of block hashes.
     */
    public int hashCount() {
        return hashCount;
    }

    /**
     * @return true when the event names a parent block.
     */
    public boolean hasParent() {
        return hasParent;
    }

    /**
     * @return parent block hash when {@link #hasParent()}.
     */
    public long parentHash() {
        return parentHash;
    }

    /**
     * @return token ids of all blocks; valid up to {@link #tokenCount()}.
     */
    public int[] tokens() {
        return tokens;
    }

    /**
     * @return number of token ids.
     */
    public int tokenCount() {
        return tokenCount;
    }

    /**
     * @return block size in tokens, or -1 when absent.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * @return deprecated integer LoRA id, or -1 when absent.
     */
    public long loraId() {
        return loraId;
    }

    /**
     * @return one of {@code MEDIUM_*}.
     */
    public int medium() {
        return medium;
    }

    /**
     * @return true when the event carries a LoRA name.
     */
    public boolean hasLoraName() {
        return loraNameLength >= 0;
    }

    /**
     * @return UTF-8 bytes of the LoRA name; valid up to {@link #loraNameLength()}.
     */
    public byte[] loraNameBytes() {
        return loraName;
    }

    /**
     * @return length of the LoRA name, or -1 when absent.
     */
    public int loraNameLength() {
        return loraNameLength;
    }

    /**
     * Allocates: for the slow path (cache miss, logging) only.
     *
     * @return the LoRA name, or null.
     */
    public String loraNameString() {
        return loraNameLength < 0 ? null : new String(loraName, 0, loraNameLength, StandardCharsets.UTF_8);
    }

    /**
     * @return KV cache group index (0 when absent).
     */
    public int groupIdx() {
        return groupIdx;
    }

    /**
     * @return the storing group's cache kind: one of {@code SPEC_KIND_*}.
     */
    public int specKind() {
        return specKind;
    }

    /**
     * @return true when the event carries a cache salt at event level (SGLang's {@code cache_salt}; vLLM sends its
     *     salt inside {@code extra_keys} of the first block instead).
     */
    public boolean hasCacheSalt() {
        return cacheSaltLength >= 0;
    }

    /**
     * @return UTF-8 bytes of the event-level cache salt; valid up to {@link #cacheSaltLength()}.
     */
    public byte[] cacheSaltBytes() {
        return cacheSalt;
    }

    /**
     * @return length of the event-level cache salt in UTF-8 bytes, or -1 when absent.
     */
    public int cacheSaltLength() {
        return cacheSaltLength;
    }

    /**
     * Allocates: for the slow path (logging, tests) only.
     *
     * @return the event-level cache salt, or null.
     */
    public String cacheSaltString() {
        return cacheSaltLength < 0 ? null : new String(cacheSalt, 0, cacheSaltLength, StandardCharsets.UTF_8);
    }

    /**
     * @param length cache salt length in UTF-8 bytes, or -1 for none.
     * @return the array to fill with the salt.
     */
    public byte[] cacheSaltForWrite(final int length) {
        if (cacheSalt.length < length) {
            cacheSalt = Arrays.copyOf(cacheSalt, Math.max(length, cacheSalt.length * 2));
        }
        cacheSaltLength = length;
        return cacheSalt;
    }

    /**
     * @param kind a {@code TYPE_*} value (when another format names it after some of the fields).
     * @return this.
     */
    public BlockEvent type(final int kind) {
        this.type = kind;
        return this;
    }

    /**
     * Records a problem found while filling the view from another format; the first one wins.
     *
     * @param code a {@code PROBLEM_*} value.
     * @return this.
     */
    public BlockEvent problem(final int code) {
        if (problem == PROBLEM_NONE) {
            problem = code;
        }
        return this;
    }

    /**
     * @param has    true when the first block has a parent.
     * @param parent the parent's engine hash.
     * @return this.
     */
    public BlockEvent parent(final boolean has, final long parent) {
        this.hasParent = has;
        this.parentHash = parent;
        return this;
    }

    /**
     * @param size block size in tokens, or -1 for absent.
     * @return this.
     */
    public BlockEvent blockSize(final int size) {
        this.blockSize = size;
        return this;
    }

    /**
     * @param where one of {@code MEDIUM_*}.
     * @return this.
     */
    public BlockEvent medium(final int where) {
        this.medium = where;
        return this;
    }

    /**
     * @param id deprecated integer LoRA id, or -1 for absent.
     * @return this.
     */
    public BlockEvent loraId(final long id) {
        this.loraId = id;
        return this;
    }

    /**
     * @param group KV cache group index.
     * @return this.
     */
    public BlockEvent groupIdx(final int group) {
        this.groupIdx = group;
        return this;
    }

    /**
     * @param kind the storing group's cache kind: one of {@code SPEC_KIND_*}.
     * @return this.
     */
    public BlockEvent specKind(final int kind) {
        this.specKind = kind;
        return this;
    }

    /**
     * @param where one of {@code LOCALITY_*}.
     * @return this.
     */
    public BlockEvent locality(final int where) {
        this.locality = where;
        return this;
    }

    /**
     * Records a field value that was defaulted rather than dropping the event.
     *
     * @param flag a {@code FLAG_*} bit.
     * @return this.
     */
    public BlockEvent flag(final int flag) {
        this.flags |= flag;
        return this;
    }

    /**
     * @return one of {@code LOCALITY_*} (vLLM's {@code locality}, newer versions).
     */
    public int locality() {
        return locality;
    }

    /**
     * @return {@code FLAG_*} bits: field values that were defaulted rather than dropping the event.
     */
    public int flags() {
        return flags;
    }

    /**
     * @return true for a BlockStored without tokens ({@code token_ids = []}, {@code block_size = 0}): vLLM's CPU
     * offload events before vllm#43468, which name blocks the pod already holds by engine hash only.
     */
    public boolean isTokenless() {
        return type == TYPE_BLOCK_STORED && blockSize == 0 && tokenCount == 0 && hashCount > 0;
    }

    /**
     * @return the BlockStored's {@code extra_keys} (not {@link BlockExtraKeys#present()} for other events).
     */
    public BlockExtraKeys extraKeys() {
        return extraKeys;
    }

    /**
     * @param type a {@code TYPE_*} value.
     * @return its vLLM name.
     */
    public static String typeName(final int type) {
        return switch (type) {
            case TYPE_BLOCK_STORED -> "BlockStored";
            case TYPE_BLOCK_REMOVED -> "BlockRemoved";
            case TYPE_ALL_BLOCKS_CLEARED -> "AllBlocksCleared";
            default -> "unknown";
        };
    }

    /**
     * @param problem a {@code PROBLEM_*} value.
     * @return a short description.
     */
    public static String problemName(final int problem) {
        return switch (problem) {
            case PROBLEM_NONE -> "none";
            case PROBLEM_HASH_WIDTH -> "block hash of unsupported width";
            case PROBLEM_FIELD_TYPE -> "field of the wrong type";
            case PROBLEM_TOO_LARGE -> "too many hashes or tokens";
            case PROBLEM_UNKNOWN_TYPE -> "unknown event type";
            case PROBLEM_EVENT_SHAPE -> "event neither array nor map";
            case PROBLEM_TOKEN_RANGE -> "token id out of 32-bit range";
            case PROBLEM_EXTRA_KEYS_TYPE -> "extra_keys not an array of per-block arrays, or an element neither str,"
                + " bin nor [str, int]";
            case PROBLEM_EXTRA_KEYS_LENGTH -> "extra_keys has another number of entries than block_hashes";
            case PROBLEM_EXTRA_KEYS_TOO_LARGE -> "extra_keys larger than the decoder's limits";
            default -> "problem " + problem;
        };
    }
}
