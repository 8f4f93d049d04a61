package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.PrefixResult;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Layout 3.1's pod table version: the writer moves it on every pod table change (registration, pod down, slot
 * freed), a reused slot gets the next generation, and every query answer carries the version it was read at.
 */
@Timeout(30)
class PodTableVersionTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(ints = {64, 256})
    void shouldMoveThePodTableVersionOnEveryPodTableChange(final int maxPods) {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(maxPods));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
            assertEquals(0, reader.podTableVersion());
            final int a = writer.registerPod("a", "m");
            assertEquals(1, reader.podTableVersion());
            assertEquals(a, writer.registerPod("a", "m"), "idempotent");
            assertEquals(1, reader.podTableVersion(), "no change, no bump");
            writer.store(a, TestIndexes.chain(1, 4), 0, 4);
            assertEquals(1, reader.podTableVersion(), "blocks are not pod table changes");
            // Every other slot taken: c must reuse a's slot once it is freed.
            final long v = 1 + TestIndexes.fillFreeSlots(writer);
            assertEquals(v, reader.podTableVersion(), "one bump per registration");
            writer.podDown(a);
            assertEquals(v + 1, reader.podTableVersion());
            while (writer.isSweeping()) {
                writer.sweepStep();
            }
            assertEquals(v + 2, reader.podTableVersion(), "the slot is freed");
            assertEquals(a, writer.registerPod("c", "m"));
            assertEquals(v + 3, reader.podTableVersion());
            assertEquals(2, reader.pod(a).generation(), "the slot's second pod");
            assertEquals("c", reader.pod(a).podId());
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {64, 256})
    void shouldRecordTheVersionInEveryAnswer(final int maxPods) {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(maxPods));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
            final int a = writer.registerPod("a", "m");
            final int b = writer.registerPod("b", "m");
            final long[] chain = TestIndexes.chain(2, 8);
            writer.store(a, chain, 0, 8);
            final PrefixResult result = new PrefixResult();
            assertEquals(8, reader.query(chain, 8, null, result));
            assertEquals(2, result.podTableVersion());
            writer.podDown(b);
            assertEquals(8, reader.queryExact(chain, 8, null, result));
            assertEquals(3, result.podTableVersion());
            reader.query(chain, 0, null, result);
            assertEquals(3, result.podTableVersion(), "an empty chain");
            final PodSet onlyB = new PodSet();
            onlyB.add(b);
            assertEquals(0, reader.query(chain, 8, onlyB, result));
            assertEquals(3, result.podTableVersion(), "no alive candidate");
            writer.registerPod("c", "m");
            assertEquals(0, reader.queryExact(chain, 8, onlyB, result));
            assertEquals(4, result.podTableVersion());
        }
    }
}
