package io.kvidx.daemon.lifecycle;


import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.exec.CacheHint;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.client.tiers.TierMap;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A router in its own JVM, started with no JVM flag (no native access, no exports): it attaches to the daemon's
 * index, loads a YAML profile whose cache-affinity scorer is tier-weighted (the host tier map opened beside the
 * index by {@link YamlRouting}), and answers one line per command on stdin:
 * <ul>
 *   <li>{@code route K1,K2,...}: {@code ok <picked pod id> <cache hint of the pick>};</li>
 *   <li>{@code tiers POD K1,K2,...}: {@code ok <tier bits of each key for that pod, comma-separated>};</li>
 *   <li>{@code quit}.</li>
 * </ul>
 * Arguments: index directory, cell, YAML file.
 */
public final class TierRouterMain {
    private TierRouterMain() {
    }

    /**
     * @param args directory, cell, YAML file.
     */
    public static void main(final String[] args) throws Exception {
        final IndexReaderPodIndex index = new IndexReaderPodIndex(new IndexReaderContext().dir(Path.of(args[0]))
            .cell(args[1]).heartbeatTimeoutMs(10_000), 100);
        final PodRegistry registry = new PodRegistry();
        final YamlRouting.Environment env = new YamlRouting.Environment().index(index).registry(registry);
        final Router router = YamlRouting.load(Path.of(args[2]), env).router();
        final TierMap tiers = ((io.kvidx.routing.TierMapLookup) env.tiers()).tierMap();
        final CacheHint hint = new CacheHint(tiers, CacheHint.HEADER_DEFAULT);
        final RoutingContext ctx = router.newContext();
        System.out.println("ready");
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            final String[] words = line.trim().split(" ");
            try {
                // Pods registered since the last command (the selector keeps known slots in step by itself).
                registry.registerFromIndex(index);
                switch (words[0]) {
                    case "quit" -> {
                        System.out.println("bye");
                        return;
                    }
                    case "route" -> {
                        final long[] keys = parse(words[1]);
                        final int slot = router.routeKeys(ctx, keys, keys.length);
                        System.out.println("ok " + (slot < 0 ? "-" : registry.podId(slot)) + " "
                            + (slot < 0 ? "-" : hint.value(ctx, slot).replace(" ", "")));
                    }
                    case "tiers" -> {
                        final int slot = registry.slotOf(words[1]);
                        final long[] keys = parse(words[2]);
                        final int[] bits = new int[keys.length];
                        for (int i = 0; i < keys.length; i++) {
                            bits[i] = slot < 0 ? Integer.MIN_VALUE : tiers.tierBits(slot, keys[i]);
                        }
                        System.out.println("ok " + Arrays.toString(bits).replace(" ", ""));
                    }
                    default -> System.out.println("error unknown command " + words[0]);
                }
            } catch (final RuntimeException ex) {
                System.out.println("error " + ex);
            }
        }
    }

    private static long[] parse(final String csv) {
        return Arrays.stream(csv.split(",")).mapToLong(Long::parseLong).toArray();
    }
}
