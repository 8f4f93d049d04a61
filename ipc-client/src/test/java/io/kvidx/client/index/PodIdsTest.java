package io.kvidx.client.index;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one pod id rule: its character set, its length bound, {@code #} only before a rank. */
class PodIdsTest {
    private static final String[] VALID = {"7", "pod-a", "10.0.0.2:8000", "vllm-0.ns_1", "7#1", "x#1024", "Z:9#12",
        "a".repeat(112), "a".repeat(107) + "#1024"};
    private static final String[] INVALID = {"", "#1", "7#0", "7#01", "7#1025", "7#", "7#x", "7#1#2", "a#b#1",
        "a/b", "a b", "a@b", "a?b", "a%2F", "caf\u00e9", "a\u0000", "a\nb", "a".repeat(113), "a".repeat(108) + "#1024",
        "a#12345"};

    @Test
    void shouldAcceptThePodIdsTheRuleAllowsAndNothingElse() {
        for (final String id : VALID) {
            assertNull(PodIds.checkPodId(id), id);
            final byte[] b = ("xx" + id + "yy").getBytes(StandardCharsets.UTF_8);
            assertTrue(PodIds.isPodId(b, 2, b.length - 4), id);
        }
        for (final String id : INVALID) {
            assertNotNull(PodIds.checkPodId(id), id);
            final byte[] b = id.getBytes(StandardCharsets.UTF_8);
            assertEquals(false, PodIds.isPodId(b, 0, b.length), id);
        }
    }

    @Test
    void shouldRefuseAHashInAnInstanceIdSayingWhy() {
        final String why = PodIds.checkInstanceId("7#1");
        assertNotNull(why);
        assertTrue(why.contains("'#'") && why.contains("rank 1 of instance 7") && why.contains("dp_rank"), why);
        assertTrue(PodIds.checkInstanceId("a/b").contains("'/'"), PodIds.checkInstanceId("a/b"));
        assertTrue(PodIds.checkInstanceId("a".repeat(113)).contains("at most 112"));
        assertNull(PodIds.checkInstanceId("10.0.0.2:8000"));
    }

    @Test
    void shouldEscapeAndCutUntrustedTextForALogLine() {
        assertEquals("a\\u000ab\\u005c", PodIds.printable("a\nb\\"));
        assertEquals("x".repeat(64) + "...", PodIds.printable("x".repeat(100)));
    }
}
