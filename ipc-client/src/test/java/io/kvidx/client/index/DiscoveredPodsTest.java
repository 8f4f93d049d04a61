package io.kvidx.client.index;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The cell's discovered-pod directory: its bytes, a round trip, and every way a file is refused. */
class DiscoveredPodsTest {
    @TempDir
    Path dir;

    @Test
    void shouldWriteThePinnedFormatAndReadItBack() throws Exception {
        final List<DiscoveredPods.Pod> pods = List.of(
            new DiscoveredPods.Pod("vllm-0", "http://10.0.0.7:8000", "Qwen/Qwen3-0.6B", "gpu-3", "us-east1-b"),
            new DiscoveredPods.Pod("vllm-1", "http://[fd00::1]:8000", null, null, null));
        DiscoveredPods.write(dir, pods);
        final String text = Files.readString(dir.resolve(DiscoveredPods.FILE_NAME), StandardCharsets.UTF_8);
        assertEquals("{\"version\":1,\"pods\":[{\"id\":\"vllm-0\",\"url\":\"http://10.0.0.7:8000\","
            + "\"model\":\"Qwen/Qwen3-0.6B\",\"node\":\"gpu-3\",\"zone\":\"us-east1-b\"},{\"id\":\"vllm-1\","
            + "\"url\":\"http://[fd00::1]:8000\",\"model\":null,\"node\":null,\"zone\":null}]}\n", text);
        final Map<String, DiscoveredPods.Pod> read = DiscoveredPods.parse(text);
        assertEquals(List.of("vllm-0", "vllm-1"), List.copyOf(read.keySet()));
        assertEquals(pods.get(0), read.get("vllm-0"));
        assertEquals(pods.get(1), read.get("vllm-1"));
        assertEquals("fd00::1", read.get("vllm-1").uri().getHost().replace("[", "").replace("]", ""));
        assertFalse(Files.exists(dir.resolve(DiscoveredPods.FILE_NAME + ".tmp")), "the temporary file is renamed");
        DiscoveredPods.remove(dir);
        assertFalse(Files.exists(dir.resolve(DiscoveredPods.FILE_NAME)));
        DiscoveredPods.remove(dir); // removing nothing is fine
    }

    @Test
    void shouldRefuseWhatIsNotADirectoryOfThisVersion() {
        final String ok = "{\"id\":\"p\",\"url\":\"http://h:1\"}";
        for (final String bad : new String[] {
            "[]",
            "{\"pods\":[]}",
            "{\"version\":2,\"pods\":[]}",
            "{\"version\":1}",
            "{\"version\":1,\"pods\":{}}",
            "{\"version\":1,\"pods\":[1]}",
            "{\"version\":1,\"pods\":[{\"url\":\"http://h:1\"}]}",
            "{\"version\":1,\"pods\":[{\"id\":\"p\"}]}",
            "{\"version\":1,\"pods\":[{\"id\":7,\"url\":\"http://h:1\"}]}",
            "{\"version\":1,\"pods\":[{\"id\":\"\",\"url\":\"http://h:1\"}]}",
            "{\"version\":1,\"pods\":[{\"id\":\"p#1\",\"url\":\"http://h:1\"}]}",
            "{\"version\":1,\"pods\":[{\"id\":\"p\",\"url\":\"tcp://h:1\"}]}",
            "{\"version\":1,\"pods\":[{\"id\":\"p\",\"url\":\"http:///x\"}]}",
            "{\"version\":1,\"pods\":[{\"id\":\"p\",\"url\":\"http://h:1\",\"node\":3}]}",
            "{\"version\":1,\"pods\":[" + ok + "," + ok + "]}",
            "{\"version\":1,\"pods\":[" + ok + "]",
        }) {
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                () -> DiscoveredPods.parse(bad), bad);
            assertTrue(ex.getMessage() != null && !ex.getMessage().isEmpty(), bad);
        }
        assertEquals(1, DiscoveredPods.parse("{\"version\":1,\"pods\":[" + ok + "]}").size());
    }
}
