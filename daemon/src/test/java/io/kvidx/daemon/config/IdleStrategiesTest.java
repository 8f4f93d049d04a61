package io.kvidx.daemon.config;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Idle strategy names: {@code backoff-<N>us} parks at most N us (1..1000), other values of N and malformed names are
 * refused with the accepted list.
 */
class IdleStrategiesTest {
    @Test
    void shouldBuildABackoffThatParksAtMostTheGivenMicroseconds() {
        assertEquals("backoff-50us", IdleStrategies.canonical("writerIdle", "backoff-50us"));
        final IdleStrategy idle = IdleStrategies.supplier("backoff-50us").get();
        assertTrue(idle instanceof BackoffIdleStrategy, idle.toString());
        assertTrue(idle.toString().contains("maxParkPeriodNs=50000"), idle.toString());
        assertTrue(IdleStrategies.supplier(IdleStrategies.BACKOFF).get().toString()
            .contains("maxParkPeriodNs=1000000"), "plain backoff parks up to 1 ms");
    }

    @Test
    void shouldRefuseBackoffsOutOfRangeOrMalformed() {
        for (final String bad : List.of("backoff-0us", "backoff-1001us", "backoff-us", "backoff-5ms", "backoff-x1us",
            "backoff-12345us")) {
            final ConfigException ex = assertThrows(ConfigException.class,
                () -> IdleStrategies.canonical("writerIdle", bad), bad);
            assertTrue(ex.getMessage().contains("backoff-<N>us"), ex.getMessage());
        }
    }
}
