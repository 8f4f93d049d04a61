package io.kvidx.routing.plugins;

import io.kvidx.client.keys.RequestExtras;
import io.kvidx.routing.BlockKeys;
import io.kvidx.routing.LongValue;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TokenIds;

import java.util.Set;

/**
 * Computes the key a {@link ConsistentHashPicker} places the request with, into {@link Slots#HASH_KEY}: the hash
 * of a header's value when the header is present (e.g. a user or session id), otherwise a hash of the prompt's
 * start: the first {@code prefixTokens} token ids with the multimodal items placed among them ({@link Source#TOKENS})
 * or the key of block
 * {@code prefixBlocks - 1} ({@link Source#KEYS}, which identifies the whole prefix up to it). Requests sharing a
 * prompt start thus land on the same pod.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class HashKeyPreparer implements Preparer {
    /**
     * What to hash when the header is absent.
     */
    public enum Source {
        /** The first prefix tokens (reads {@link Slots#TOKENS}). */
        TOKENS,
        /** The key of the last block of the prefix (reads {@link Slots#BLOCK_KEYS}). */
        KEYS
    }

    private final String name;
    private final String header;
    private final Source source;
    private final int prefix;

    /**
     * @param name   plugin name.
     * @param header header whose value is the key when present, or null.
     * @param source what to hash otherwise.
     * @param prefix tokens (TOKENS) or blocks (KEYS) of the prompt start to hash; > 0.
     */
    public HashKeyPreparer(final String name, final String header, final Source source, final int prefix) {
        if (prefix <= 0) {
            throw new IllegalArgumentException("prefix must be > 0: " + prefix);
        }
        this.name = name;
        this.header = header;
        this.source = source;
        this.prefix = prefix;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.REQUEST, source == Source.TOKENS ? Slots.TOKENS : Slots.BLOCK_KEYS);
    }

    @Override
    public Set<Slot<?>> writes() {
        return Set.of(Slots.HASH_KEY);
    }

    @Override
    public void prepare(final RoutingContext ctx) {
        final LongValue out = ctx.get(Slots.HASH_KEY);
        final String value = header == null ? null : ctx.get(Slots.REQUEST).header(header);
        if (value != null && !value.isEmpty()) {
            out.set(RoutingContext.hash(value));
            return;
        }
        if (source == Source.TOKENS) {
            final TokenIds tokens = ctx.get(Slots.TOKENS);
            final int n = Math.min(prefix, tokens.length());
            if (n == 0) {
                out.clear();
                return;
            }
            final int[] ids = tokens.ids();
            long h = 0x243F6A8885A308D3L;
            for (int i = 0; i < n; i++) {
                h = RoutingContext.mix(h ^ ids[i]);
            }
            // Multimodal items whose placeholders begin within the prefix: different images behind the same
            // placeholder tokens are different prompts.
            final RequestExtras extras = ctx.get(Slots.REQUEST).extras();
            for (int i = 0, m = extras.itemCount(); i < m && extras.itemOffset(i) < n; i++) {
                h = RoutingContext.mix(h ^ extras.itemIdentifierHash(i)) ^ extras.itemOffset(i);
            }
            out.set(h);
        } else {
            final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
            final int n = Math.min(prefix, keys.length());
            if (n == 0) {
                out.clear();
            } else {
                out.set(RoutingContext.mix(keys.keys()[n - 1]));
            }
        }
    }
}
