package io.kvidx.routing;

/**
 * The standard slots the built-in plugins exchange data through.
 *
 * <p>{@link #TOKENS} and {@link #REQUEST} are written by the request itself (the router fills them before a
 * decision); {@link #PREFILL_PICK} by a {@link PrefillDecodeWorkflow} between its two selectors.
 */
public final class Slots {
    /** Prompt token ids of the request. */
    public static final Slot<TokenIds> TOKENS = Slot.of("tokens", TokenIds.class, TokenIds::new);
    /** Model, LoRA adapter and headers of the request. */
    public static final Slot<RequestMeta> REQUEST = Slot.of("request", RequestMeta.class, RequestMeta::new);
    /** The prompt's chain of block keys. */
    public static final Slot<BlockKeys> BLOCK_KEYS = Slot.of("block-keys", BlockKeys.class, BlockKeys::new);
    /** Cached prefix depth per pod for the chain in {@link #BLOCK_KEYS}. */
    public static final Slot<PodDepths> PREFIX_DEPTHS = Slot.of("prefix-depths", PodDepths.class, PodDepths::new);
    /** Hash of the request's session id (absent when the request carries none). */
    public static final Slot<LongValue> SESSION_KEY = Slot.of("session-key", LongValue.class, LongValue::new);
    /** Key a consistent-hash picker places the request on its ring with. */
    public static final Slot<LongValue> HASH_KEY = Slot.of("hash-key", LongValue.class, LongValue::new);
    /** The prefill selector's pick, seen by the decode selector of a prefill/decode workflow. */
    public static final Slot<PodPick> PREFILL_PICK = Slot.of("prefill-pick", PodPick.class, PodPick::new);

    private Slots() {
    }
}
