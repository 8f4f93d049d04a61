package io.kvidx.routing;

import io.kvidx.routing.plugins.AliveFilter;
import io.kvidx.routing.plugins.ConcurrencyFilter;
import io.kvidx.routing.plugins.LoraFilter;
import io.kvidx.routing.plugins.ModelFilter;
import io.kvidx.routing.plugins.RoleFilter;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class FiltersTest {
    private static List<Integer> candidates(final RoutingContext ctx) {
        final List<Integer> l = new ArrayList<>();
        for (int s = ctx.nextCandidate(0); s >= 0; s = ctx.nextCandidate(s + 1)) {
            l.add(s);
        }
        assertEquals(l.size(), ctx.candidateCount());
        return l;
    }

    @Test
    void shouldKeepOnlyAlivePods() {
        final PodRegistry registry = PluginTestSupport.registry(4);
        registry.register(200, "far", "m", PodRole.BOTH, null);
        final MapPodIndex index = new MapPodIndex();
        index.pod(0, "a", "m").pod(2, "c", "m").pod(3, "d", "m").pod(200, "far", "m");
        index.down(3);
        final RoutingContext ctx = PluginTestSupport.context(registry, index);
        new AliveFilter("alive", index).filter(ctx);
        assertEquals(List.of(0, 2, 200), candidates(ctx));
    }

    @Test
    void shouldKeepPodsServingTheRole() {
        final PodRegistry registry = new PodRegistry();
        registry.register(0, "p", null, PodRole.PREFILL, null).register(1, "d", null, PodRole.DECODE, null)
            .register(2, "b", null, PodRole.BOTH, null);
        RoutingContext ctx = PluginTestSupport.context(registry, null);
        new RoleFilter("r", registry, PodRole.PREFILL).filter(ctx);
        assertEquals(List.of(0, 2), candidates(ctx));
        ctx = PluginTestSupport.context(registry, null);
        new RoleFilter("r", registry, PodRole.DECODE).filter(ctx);
        assertEquals(List.of(1, 2), candidates(ctx));
        ctx = PluginTestSupport.context(registry, null);
        new RoleFilter("r", registry, PodRole.BOTH).filter(ctx);
        assertEquals(List.of(0, 1, 2), candidates(ctx));
    }

    @Test
    void shouldKeepPodsServingTheModel() {
        final PodRegistry registry = new PodRegistry();
        registry.register(0, "a", "llama", PodRole.BOTH, null).register(1, "b", "qwen", PodRole.BOTH, null)
            .register(2, "c", null, PodRole.BOTH, null);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        ctx.request().model("qwen");
        new ModelFilter("m", registry).filter(ctx);
        assertEquals(List.of(1, 2), candidates(ctx));
        final RoutingContext any = PluginTestSupport.context(registry, null);
        new ModelFilter("m", registry).filter(any);
        assertEquals(List.of(0, 1, 2), candidates(any));
    }

    @Test
    void shouldKeepPodsWithTheAdapterOrRoomForIt() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        registry.loraLoaded(0, "sql").maxLoras(0, 1);
        registry.loraLoaded(1, "chat").maxLoras(1, 1);
        registry.loraLoaded(2, "chat").maxLoras(2, 4);
        RoutingContext ctx = PluginTestSupport.context(registry, null);
        ctx.request().lora("sql");
        new LoraFilter("l", registry, true).filter(ctx);
        assertEquals(List.of(0), candidates(ctx));
        ctx = PluginTestSupport.context(registry, null);
        ctx.request().lora("sql");
        new LoraFilter("l", registry, false).filter(ctx);
        assertEquals(List.of(0, 2), candidates(ctx));
        ctx = PluginTestSupport.context(registry, null);
        ctx.request().lora("never-seen");
        new LoraFilter("l", registry, false).filter(ctx);
        assertEquals(List.of(2), candidates(ctx));
    }

    @Test
    void shouldRemovePodsAtTheirConcurrencyCap() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        registry.maxConcurrency(0, 2).load(0, 0, 2, 0);
        registry.load(1, 0, 5, 0);
        registry.load(2, 0, 3, 0);
        RoutingContext ctx = PluginTestSupport.context(registry, null);
        new ConcurrencyFilter("c", registry, 4).filter(ctx);
        assertEquals(List.of(2), candidates(ctx));
        ctx = PluginTestSupport.context(registry, null);
        new ConcurrencyFilter("c", registry, 0).filter(ctx);
        assertEquals(List.of(1, 2), candidates(ctx));
    }
}
