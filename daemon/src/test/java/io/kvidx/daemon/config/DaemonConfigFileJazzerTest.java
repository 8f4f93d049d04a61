package io.kvidx.daemon.config;

import com.code_intelligence.jazzer.junit.FuzzTest;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Coverage-guided fuzzing (Jazzer) of the daemon's YAML config reader: any text fills the context or is refused with
 * a {@link ConfigException} or {@link IllegalArgumentException} naming the problem; nothing else escapes (no
 * snakeyaml exception, no ClassCastException or NumberFormatException from a value of the wrong type). Seeds:
 * config/*.yaml-style files covering every section.
 */
class DaemonConfigFileJazzerTest {
    @FuzzTest(maxDuration = "10m")
    void shouldFillTheContextOrRefuseWithAMessage(final byte[] yaml) {
        try {
            DaemonConfigFile.parse(new String(yaml, StandardCharsets.UTF_8), new DaemonContext(), "fuzz.yaml");
        } catch (final IllegalArgumentException expected) {
            assertNotNull(expected.getMessage());
        }
    }
}
