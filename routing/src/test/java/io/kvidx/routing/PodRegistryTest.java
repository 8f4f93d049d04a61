package io.kvidx.routing;

import org.junit.jupiter.api.Test;

import java.net.URI;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PodRegistryTest {
    @Test
    void shouldKeepRequestsEqualToQueuedPlusRunning() {
        final PodRegistry r = new PodRegistry().register(7, "p", "m", PodRole.DECODE, URI.create("http://x:1"));
        r.load(7, 3, 4, 100);
        assertEquals(7, r.requests(7));
        r.requestStarted(7, 50);
        assertEquals(8, r.requests(7));
        assertEquals(5, r.running(7));
        assertEquals(150, r.tokens(7));
        r.load(7, 1, 2, 10);
        assertEquals(3, r.requests(7));
        r.requestFinished(7, 10);
        assertEquals(2, r.requests(7));
        assertEquals(0, r.tokens(7));
    }

    @Test
    void shouldRegisterAndUnregisterWithAVersion() {
        final PodRegistry r = new PodRegistry();
        final long v0 = r.version();
        r.register(200, "far", null, PodRole.BOTH, null);
        assertTrue(r.isRegistered(200));
        assertEquals(1L << (200 - 192), r.registeredWord(3));
        assertEquals(200, r.slotOf("far"));
        assertNotEquals(v0, r.version());
        r.unregister(200);
        assertFalse(r.isRegistered(200));
        assertEquals(-1, r.slotOf("far"));
        assertThrows(IllegalArgumentException.class, () -> r.register(256, "x", null, PodRole.BOTH, null));
        assertThrows(IllegalArgumentException.class, () -> r.kvUtilization(0, 1.5));
    }

    @Test
    void shouldTrackAdapters() {
        final PodRegistry r = new PodRegistry().register(1, "p", null, PodRole.BOTH, null);
        assertEquals(-1, r.loraId("sql"));
        r.loraLoaded(1, "sql").loraLoaded(1, "chat");
        assertTrue(r.hasLora(1, r.loraId("sql")));
        assertEquals(2, r.loraCount(1));
        r.loraUnloaded(1, "sql");
        assertFalse(r.hasLora(1, r.loraId("sql")));
        assertFalse(r.hasLora(1, -1));
    }

    @Test
    void shouldReLearnASlotTakenFromTheIndexWhenItChangesHands() {
        final MapPodIndex index = new MapPodIndex().pod(3, "a", "m1").pod(4, "b", "m1");
        final PodRegistry r = new PodRegistry();
        assertEquals(2, r.registerFromIndex(index));
        assertEquals(1, r.generation(3));
        assertTrue(r.syncWithIndex(index));
        assertEquals(index.podTableVersion(), r.podTableVersion());
        r.load(3, 5, 6, 70);
        final long version = r.version();

        index.free(3).pod(3, "c", "m2");
        assertTrue(r.syncWithIndex(index));
        assertEquals("c", r.podId(3));
        assertEquals("m2", r.model(3));
        assertEquals(2, r.generation(3));
        assertEquals(0, r.requests(3), "the new pod's load starts from zero");
        assertTrue(r.isRegistered(3));
        assertEquals("b", r.podId(4));
        assertNotEquals(version, r.version());
        assertEquals(index.podTableVersion(), r.podTableVersion());
    }

    @Test
    void shouldExcludeAFreedSlotUntilTheIndexGivesItToAPodAgain() {
        final MapPodIndex index = new MapPodIndex().pod(3, "a", "m");
        final PodRegistry r = new PodRegistry();
        r.registerFromIndex(index);
        index.free(3);
        assertTrue(r.syncWithIndex(index));
        assertFalse(r.isRegistered(3), "a free slot is excluded");
        assertEquals(-1, r.slotOf("a"));
        index.pod(3, "d", "m");
        assertTrue(r.syncWithIndex(index));
        assertTrue(r.isRegistered(3), "a slot taken from the index follows it");
        assertEquals("d", r.podId(3));
    }

    @Test
    void shouldExcludeAHandRegisteredSlotWhileTheIndexHoldsAnotherPodThere() {
        final URI endpoint = URI.create("http://x:1");
        final MapPodIndex index = new MapPodIndex().pod(2, "x", "m");
        final PodRegistry r = new PodRegistry().register(2, "x", "m", PodRole.DECODE, endpoint);
        assertEquals(PodRegistry.UNKNOWN_GENERATION, r.generation(2));
        assertTrue(r.syncWithIndex(index));
        assertTrue(r.isRegistered(2));
        assertEquals(1, r.generation(2), "learnt from the index");

        index.free(2).pod(2, "y", "m");
        assertTrue(r.syncWithIndex(index));
        assertFalse(r.isRegistered(2), "another pod holds the slot: never route to it under x's name");
        assertEquals("x", r.podId(2));
        assertEquals(0, r.registerFromIndex(index), "the router's own registration stands");

        index.free(2).pod(2, "x", "m");
        assertTrue(r.syncWithIndex(index));
        assertTrue(r.isRegistered(2), "x is back in its slot");
        assertEquals(3, r.generation(2));
        assertEquals(endpoint, r.endpoint(2));
        assertEquals(PodRole.DECODE, r.role(2));
    }

    @Test
    void shouldKeepAHandRegisteredPodTheIndexHasNotShownYet() {
        final MapPodIndex index = new MapPodIndex().pod(1, "other", "m");
        final PodRegistry r = new PodRegistry().register(5, "early", null, PodRole.BOTH, null);
        assertTrue(r.syncWithIndex(index));
        assertTrue(r.isRegistered(5), "the router may know a pod before its first event");
        final PodRegistry known = new PodRegistry().register(5, "late", null, PodRole.BOTH, null, 4);
        assertTrue(known.syncWithIndex(index));
        assertFalse(known.isRegistered(5), "a slot known at generation 4 that is now free is excluded");
    }

    @Test
    void shouldNotSyncAgainstAnUnavailableIndexNorBringBackAnUnregisteredPod() {
        final MapPodIndex index = new MapPodIndex().pod(3, "a", "m");
        final PodRegistry r = new PodRegistry();
        r.registerFromIndex(index);
        index.available = false;
        index.free(3);
        assertFalse(r.syncWithIndex(index));
        assertTrue(r.isRegistered(3), "nothing learnt from an unavailable index");
        index.available = true;
        index.pod(3, "b", "m");
        r.unregister(3);
        assertTrue(r.syncWithIndex(index));
        assertFalse(r.isRegistered(3), "unregistered means forgotten");
    }

    @Test
    void shouldCheckARegistrationMadeAfterTheLastSyncAtTheNextOne() {
        final MapPodIndex index = new MapPodIndex().pod(2, "y", "m");
        final PodRegistry r = new PodRegistry();
        assertTrue(r.syncWithIndex(index));
        r.register(2, "x", "m", PodRole.BOTH, null);
        assertEquals(PodIndex.NO_POD_TABLE_VERSION, r.podTableVersion(), "a decision will find another version");
        assertTrue(r.isRegistered(2));
        assertTrue(r.syncWithIndex(index));
        assertFalse(r.isRegistered(2), "the index holds y in slot 2");
    }
}
