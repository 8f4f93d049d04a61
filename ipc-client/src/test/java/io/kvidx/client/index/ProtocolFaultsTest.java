package io.kvidx.client.index;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pins that the protocol fault switches are off unless a test JVM sets {@link ProtocolFaults#OMIT_PROP_NAME}
 * (production never does), that each is a {@code static final boolean} the JIT can fold, one per step, and that a
 * name no step has stops with an error listing the steps.
 */
class ProtocolFaultsTest {
    @Test
    void shouldLeaveEveryStepInWhenThePropertyIsUnset() throws IllegalAccessException {
        assertNull(System.getProperty(ProtocolFaults.OMIT_PROP_NAME), "the unit tests run without the property");
        assertNull(ProtocolFaults.OMITTED);
        int switches = 0;
        for (final Field f : ProtocolFaults.class.getFields()) {
            if (f.getType() == boolean.class) {
                assertTrue(Modifier.isStatic(f.getModifiers()) && Modifier.isFinal(f.getModifiers()), f.getName());
                assertFalse(f.getBoolean(null), f.getName());
                switches++;
            }
        }
        assertEquals(ProtocolFaults.Step.values().length, switches, "one switch per step");
    }

    @Test
    void shouldNameEveryStepOnceAndParseItsName() {
        final Set<String> names = new HashSet<>();
        for (final ProtocolFaults.Step step : ProtocolFaults.Step.values()) {
            assertTrue(names.add(step.stepName()), step.stepName());
            assertSame(step, ProtocolFaults.parse(step.stepName()));
            assertSame(step, ProtocolFaults.parse(" " + step.stepName().toUpperCase(Locale.ROOT) + " "));
        }
        assertNull(ProtocolFaults.parse(null));
        assertNull(ProtocolFaults.parse(""));
    }

    @Test
    void shouldStopWithTheStepsListedOnAnUnknownName() {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> ProtocolFaults.parse("shard-version"));
        assertTrue(ex.getMessage().contains("-D" + ProtocolFaults.OMIT_PROP_NAME + "=shard-version names no protocol"),
            ex.getMessage());
        for (final ProtocolFaults.Step step : ProtocolFaults.Step.values()) {
            assertTrue(ex.getMessage().contains(step.stepName()), ex.getMessage());
        }
    }
}
