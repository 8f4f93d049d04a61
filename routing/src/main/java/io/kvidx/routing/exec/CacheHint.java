package io.kvidx.routing.exec;

import io.kvidx.routing.TierLookup;
import io.kvidx.routing.PodDepths;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slots;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.client.tiers.TierMapReader;

import java.util.Locale;
import java.util.Objects;

/**
 * The winner's cache hint: where the chosen pod holds the prompt's matched prefix, from the host tier map, sent to
 * the pod as one request header (off unless an {@link HttpExecutor} is given one). The value lists the matched
 * blocks per tier and names the slowest tier among them, the one the engine will have to load from:
 *
 * <pre>
 *   x-kvidx-cache-hint: tier=cpu; blocks=16; gpu=12; cpu=4; disk=0; unknown=0
 * </pre>
 * {@code tier} is {@code gpu}, {@code cpu} or {@code disk} (disk also stands for storage, other media and remote
 * copies), {@code none} when the pod holds no leading block, {@code unknown} when no matched block's tier could be
 * read. A block the tier map has no entry for counts as {@code gpu} (the daemon records only blocks held elsewhere
 * than on the local GPU); {@code unknown} counts the lookups that found no current tier map, another generation of
 * the slot, or the writer busy.
 *
 * <p>It reads the tier map for the winner only, after the decision: at most one lookup per matched block.
 *
 * <p><b>Note:</b> thread safe.
 */
public final class CacheHint {
    /** Default header name. */
    public static final String HEADER_DEFAULT = "x-kvidx-cache-hint";

    private final TierMap tiers;
    private final String header;

    /**
     * @param tiers  the host tier map.
     * @param header the header's name (e.g. {@link #HEADER_DEFAULT}).
     */
    public CacheHint(final TierMap tiers, final String header) {
        this.tiers = Objects.requireNonNull(tiers, "tiers");
        if (header == null || header.isBlank() || !header.chars().allMatch(c -> c > 32 && c < 127 && c != ':')) {
            throw new IllegalArgumentException("not a header name: '" + header + "'");
        }
        this.header = header;
    }

    /**
     * @return the header's name.
     */
    public String header() {
        return header;
    }

    /**
     * @param ctx  the decision's context (prefix depths and block keys).
     * @param slot the chosen pod.
     * @return the header's value.
     */
    public String value(final RoutingContext ctx, final int slot) {
        final PodDepths depths = ctx.get(Slots.PREFIX_DEPTHS);
        final int[] d = depths.depths();
        final int depth = slot >= 0 && slot < d.length ? Math.min(d[slot], depths.chainLength()) : 0;
        final long[] keys = ctx.get(Slots.BLOCK_KEYS).keys();
        int gpu = 0;
        int cpu = 0;
        int disk = 0;
        int unknown = 0;
        for (int i = 0; i < depth; i++) {
            final int bits = tiers.tierBits(slot, keys[i]);
            if (bits == TierMapReader.ABSENT) {
                // No entry: held on the GPU alone, locally (the writer records only the other blocks).
                gpu++;
                continue;
            }
            if (bits < 0) {
                unknown++;
                continue;
            }
            switch (TierMap.tierOf(bits)) {
                case TierLookup.GPU -> gpu++;
                case TierLookup.CPU -> cpu++;
                default -> disk++;
            }
        }
        final String tier = depth == 0 ? "none" : disk > 0 ? "disk" : cpu > 0 ? "cpu" : gpu > 0 ? "gpu" : "unknown";
        return String.format(Locale.ROOT, "tier=%s; blocks=%d; gpu=%d; cpu=%d; disk=%d; unknown=%d", tier, depth, gpu,
            cpu, disk, unknown);
    }
}
