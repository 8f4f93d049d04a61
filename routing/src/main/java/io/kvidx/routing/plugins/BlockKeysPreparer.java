package io.kvidx.routing.plugins;

import io.kvidx.routing.BlockKeys;
import io.kvidx.routing.KeyFunction;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TokenIds;

import java.util.Objects;
import java.util.Set;

/**
 * Turns the request's token ids into its chain of block keys with a {@link KeyFunction} (the router-key scheme
 * the daemon indexes by). Reads {@link Slots#TOKENS}, writes {@link Slots#BLOCK_KEYS}.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class BlockKeysPreparer implements Preparer {
    private final String name;
    private final KeyFunction keyFunction;
    private final int blockSize;

    /**
     * @param name        plugin name.
     * @param keyFunction tokens to keys.
     * @param blockSize   tokens per block (sizes the key buffer).
     */
    public BlockKeysPreparer(final String name, final KeyFunction keyFunction, final int blockSize) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("blockSize must be > 0: " + blockSize);
        }
        this.name = name;
        this.keyFunction = Objects.requireNonNull(keyFunction, "keyFunction");
        this.blockSize = blockSize;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.TOKENS);
    }

    @Override
    public Set<Slot<?>> writes() {
        return Set.of(Slots.BLOCK_KEYS);
    }

    @Override
    public void prepare(final RoutingContext ctx) {
        final TokenIds tokens = ctx.get(Slots.TOKENS);
        final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
        final long[] out = keys.ensureCapacity(tokens.length() / blockSize + 1);
        keys.length(keyFunction.keys(tokens.ids(), tokens.length(), out));
    }
}
