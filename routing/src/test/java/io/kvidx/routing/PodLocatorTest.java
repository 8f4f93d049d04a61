package io.kvidx.routing;

import io.kvidx.client.index.DiscoveredPods;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where pods are reached: the listed URL, else the daemon's discovered one, else the template; the directory file
 * followed as the daemon rewrites it, a broken file keeping the last good one, a removed file forgetting them all, and
 * the discovered nodes and zones in the topology.
 */
class PodLocatorTest {
    @TempDir
    Path cell;

    @Test
    void shouldPreferListedThenDiscoveredThenTemplate() throws Exception {
        final PodTopology topology = new PodTopology();
        final PodLocator l = new PodLocator(Map.of("a", URI.create("http://listed-a:1")),
            PodUrlTemplate.of("http://{pod}.svc:8000", List.of()), cell, topology);
        DiscoveredPods.write(cell, List.of(new DiscoveredPods.Pod("a", "http://10.0.0.1:8000", null, "n1", "z1"),
            new DiscoveredPods.Pod("b", "http://10.0.0.2:8000", "m", "n2", null)));
        assertTrue(l.refresh());
        assertEquals(URI.create("http://listed-a:1"), l.url("a"));
        assertEquals(URI.create("http://listed-a:1"), l.url("a#2"), "a rank is reached at its pod's URL");
        assertEquals(URI.create("http://10.0.0.2:8000"), l.url("b"));
        assertEquals(URI.create("http://10.0.0.2:8000"), l.url("b#1"));
        assertEquals(URI.create("http://c.svc:8000"), l.url("c"));
        assertEquals(URI.create("http://c.svc:8000"), l.url("c#3"));
        assertNull(l.url(null));
        assertEquals(new PodTopology.Location("n1", "z1"), topology.location("a#1"));
        assertEquals(new PodTopology.Location("n2", null), topology.location("b"));
        assertEquals(2, topology.size());
        assertFalse(l.refresh(), "an unchanged file is not read again");
    }

    @Test
    void shouldFollowTheFileAndKeepTheLastGoodOne() throws Exception {
        final PodTopology topology = new PodTopology();
        final PodLocator l = new PodLocator(Map.of(), null, cell, topology);
        assertFalse(l.refresh());
        assertNull(l.url("b"), "no source names it");
        DiscoveredPods.write(cell, List.of(new DiscoveredPods.Pod("b", "http://10.0.0.2:8000", null, "n", "z")));
        assertTrue(l.refresh());
        assertEquals(URI.create("http://10.0.0.2:8000"), l.url("b"));

        // Re-created with a new IP.
        DiscoveredPods.write(cell, List.of(new DiscoveredPods.Pod("b", "http://10.0.0.9:8000", null, "n", "z")));
        assertTrue(l.refresh());
        assertEquals(URI.create("http://10.0.0.9:8000"), l.url("b"));

        // A broken file: the last good directory stays, the error is told.
        Files.writeString(cell.resolve(DiscoveredPods.FILE_NAME), "{\"version\":1,\"pods\":[{\"id\":\"b\"}]}",
            StandardCharsets.UTF_8);
        assertFalse(l.refresh());
        assertEquals(URI.create("http://10.0.0.9:8000"), l.url("b"));
        assertNotNull(l.lastError());
        assertTrue(l.lastError().contains("'url' is missing"), l.lastError());
        assertEquals(1, l.readFailures());

        // The daemon stopped discovering: nothing discovered remains.
        DiscoveredPods.remove(cell);
        assertTrue(l.refresh());
        assertNull(l.url("b"));
        assertNull(l.lastError());
        assertEquals(0, topology.size());
    }

    @Test
    void shouldUseNoDirectoryWithoutACell() {
        final PodLocator l = new PodLocator(Map.of(), PodUrlTemplate.of("http://{pod}:1", List.of()), null,
            new PodTopology());
        assertFalse(l.refresh());
        assertEquals(URI.create("http://10.1.2.3:1"), l.url("10.1.2.3"));
        assertTrue(l.discovered().isEmpty());
    }

    @Test
    void shouldGiveNoUrlOnAHostTheTemplateMayNotReachAndCountEachPodOnce() {
        // A pod id from the wire naming the cloud metadata server, or a public name: no URL, so neither routed to
        // nor health-checked; each pod counted once however often it is looked up.
        final PodLocator l = new PodLocator(Map.of(), PodUrlTemplate.of("http://{pod}:8000", List.of()), null,
            new PodTopology());
        for (int i = 0; i < 3; i++) {
            assertNull(l.url("169.254.169.254"));
            assertNull(l.url("evil.example"));
        }
        assertEquals(2, l.refusedPods());
        assertTrue(l.lastRefused().contains("evil.example"), l.lastRefused());
        assertEquals(URI.create("http://10.0.0.7:8000"), l.url("10.0.0.7"));
        assertEquals(URI.create("http://10.0.0.7:8000"), l.url("10.0.0.7#1"), "a rank pod at its pod's URL");
        assertEquals(2, l.refusedPods());
    }
}
