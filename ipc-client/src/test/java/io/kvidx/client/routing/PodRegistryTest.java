package io.kvidx.client.routing;

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
}
