package io.kvidx.routing.plugins;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.BlockKeys;
import io.kvidx.routing.KeyFunction;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.RequestMeta;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TokenIds;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Block keys in kvidx's router-key scheme ({@link RouterKeyHasher}, docs/keys.md): the chain is seeded by the
 * request's model, LoRA adapter and cache salt ({@link RequestMeta}), so requests for different models, adapters or
 * salts never share keys; blocks overlapping the request's multimodal items ({@link RequestMeta#extras()}) are keyed
 * with them, so different images behind identical placeholder tokens never share keys either. An empty salt is no
 * salt, as in vLLM (which folds only a non-empty salt into its hashes, so engines never report one). Reads {@link Slots#TOKENS} and {@link Slots#REQUEST}, writes {@link Slots#BLOCK_KEYS}.
 *
 * <p>Chain seeds are computed once per (model, adapter, salt) and kept in a small direct-mapped cache (compared by
 * string equality, indexed by the strings' cached hash codes), so keying a prompt allocates nothing once its model
 * has been seen.
 *
 * <p><b>Note:</b> thread safe; the seed cache holds immutable entries.
 */
public final class RouterKeysPreparer implements Preparer {
    private static final int SEED_CACHE = 64;

    private record Seed(String model, String lora, String salt, long seed) {
    }

    private final String name;
    private final RouterKeyHasher hasher;
    private final AtomicReferenceArray<Seed> seeds = new AtomicReferenceArray<>(SEED_CACHE);

    /**
     * @param name   plugin name.
     * @param hasher the router-key hasher (its block size must be the index's).
     */
    public RouterKeysPreparer(final String name, final RouterKeyHasher hasher) {
        this.name = name;
        this.hasher = Objects.requireNonNull(hasher, "hasher");
    }

    /**
     * A {@link KeyFunction} with one fixed chain seed, for a router serving one model (and adapter, salt).
     *
     * @param hasher    the hasher.
     * @param model     model name, or null.
     * @param lora      LoRA adapter name, or null.
     * @param cacheSalt cache salt, or null.
     * @return tokens to router keys.
     */
    public static KeyFunction keyFunction(final RouterKeyHasher hasher, final String model, final String lora,
        final String cacheSalt) {
        final long seed = RouterKeyHasher.chainSeed(model, lora, salt(cacheSalt));
        return (tokens, length, keys) -> hasher.keys(seed, tokens, length, keys);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.TOKENS, Slots.REQUEST);
    }

    @Override
    public Set<Slot<?>> writes() {
        return Set.of(Slots.BLOCK_KEYS);
    }

    /**
     * @return the hasher.
     */
    public RouterKeyHasher hasher() {
        return hasher;
    }

    @Override
    public void prepare(final RoutingContext ctx) {
        final TokenIds tokens = ctx.get(Slots.TOKENS);
        final RequestMeta meta = ctx.get(Slots.REQUEST);
        final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
        final long[] out = keys.ensureCapacity(tokens.length() / hasher.blockSize() + 1);
        keys.length(hasher.keys(seed(meta.model(), meta.lora(), salt(meta.cacheSalt())), tokens.ids(),
            tokens.length(), meta.extras(), out));
    }

    /** vLLM folds a cache salt into its hashes only when non-empty, so the daemon never keys with an empty one. */
    private static String salt(final String salt) {
        return salt == null || salt.isEmpty() ? null : salt;
    }

    /**
     * @param model model, or null.
     * @param lora  adapter, or null.
     * @param salt  cache salt, or null.
     * @return the chain seed, from the cache when possible.
     */
    long seed(final String model, final String lora, final String salt) {
        final int h = (Objects.hashCode(model) * 31 + Objects.hashCode(lora)) * 31 + Objects.hashCode(salt);
        final int i = (h ^ (h >>> 16)) & (SEED_CACHE - 1);
        final Seed cached = seeds.get(i);
        if (cached != null && Objects.equals(cached.model, model) && Objects.equals(cached.lora, lora)
            && Objects.equals(cached.salt, salt)) {
            return cached.seed;
        }
        final long seed = RouterKeyHasher.chainSeed(model, lora, salt);
        seeds.set(i, new Seed(model, lora, salt, seed));
        return seed;
    }
}
