package io.kvidx.daemon.serve;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResults;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestIndexes;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code POST /query} never reports a reused slot's depth under its new owner's name (issue 35): the search reads pod
 * a's bits in a slot, then (the reader preempted before it loads the pod table version) a goes down, its slot is swept
 * and given to pod b, which holds 3 of the chain's 10 blocks, and the search loads the newer version. The answer must
 * come from a search of the newer table (b at 3 blocks), not a's 10 blocks named b. A real index writer and reader;
 * the interleaving is made exact by running the writer's changes between the search and its version load. And the
 * bound: a pod table that moves under every search gets the documented 503.
 */
@Timeout(30)
class QueryRerunTest {
    private static final int BLOCKS = 10;

    @TempDir
    Path dir;

    @Test
    void shouldSearchAgainWhenThePodTableMovedUnderTheSearch() throws Exception {
        final IndexWriterContext context = new IndexWriterContext().dir(dir).cell("test").shardCount(4)
            .capacityBlocks(1024).maxPods(4).maxChainLength(64).deleteOnClose(true);
        try (IndexWriter writer = IndexWriter.create(context);
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("test")
                .attachTimeoutMs(1_000))) {
            final long[] keys = new long[BLOCKS];
            for (int i = 0; i < BLOCKS; i++) {
                keys[i] = 0x5EED_0000L + i * 7919L;
            }
            final int slotA = writer.registerPod("a", "m");
            writer.store(slotA, keys, 0, BLOCKS);
            TestIndexes.fillFreeSlots(writer);
            final PodTableView.Source pods = new PodTableView.Source(reader, null);
            final int[] searches = {0};
            final QueryHandler handler = new QueryHandler(reader, (k, n, candidates, result) -> {
                final int depth = reader.query(k, n, candidates, result);
                if (searches[0]++ == 0) {
                    // a's 10 blocks are in the answer; now its slot changes hands before the version is loaded.
                    assertEquals(BLOCKS, depth);
                    writer.podDown(slotA);
                    while (writer.isSweeping()) {
                        writer.sweepStep();
                    }
                    assertEquals(slotA, writer.registerPod("b", "m"), "b takes a's slot (every other one is held)");
                    writer.store(slotA, keys, 0, 3);
                    PrefixResults.podTableVersion(result, reader.podTableVersion());
                }
                return depth;
            }, pods, null, null);
            pods.current(); // the view of a's time, as the event loop holds it
            final String answer = answer(handler, keys);
            final int tokens = 3 * reader.blockSize();
            assertTrue(answer.startsWith("{\"scores\":{\"b\":{\"0\":" + tokens + "}},"), answer);
            assertEquals(2, searches[0], "searched again with the newer pod table");
        }
    }

    @Test
    void shouldAnswer503WhenThePodTableMovesUnderEverySearch() throws Exception {
        final IndexWriterContext context = new IndexWriterContext().dir(dir).cell("test").shardCount(4)
            .capacityBlocks(1024).maxPods(4).maxChainLength(64).deleteOnClose(true);
        try (IndexWriter writer = IndexWriter.create(context);
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("test")
                .attachTimeoutMs(1_000))) {
            final long[] keys = {11, 12, 13};
            writer.store(writer.registerPod("a", "m"), keys, 0, keys.length);
            final int[] searches = {0};
            final QueryHandler handler = new QueryHandler(reader, (k, n, candidates, result) -> {
                searches[0]++;
                final int depth = reader.query(k, n, candidates, result);
                PrefixResults.podTableVersion(result, result.podTableVersion() + 1);
                return depth;
            }, new PodTableView.Source(reader, null), null, null);
            final ApiException refused = assertThrows(ApiException.class, () -> answer(handler, keys));
            assertEquals(503, refused.status());
            assertEquals(ApiException.UNAVAILABLE, refused.code());
            assertEquals(QueryHandler.SEARCH_ATTEMPTS, searches[0]);
        }
    }

    private static String answer(final QueryHandler handler, final long[] keys) throws Exception {
        final StringBuilder json = new StringBuilder("{\"router_keys\":[");
        for (int i = 0; i < keys.length; i++) {
            json.append(i == 0 ? "" : ",").append(keys[i]);
        }
        json.append("],\"model_name\":\"m\"}");
        final RequestBody body = new RequestBody(1024);
        body.read(Unpooled.wrappedBuffer(json.toString().getBytes(StandardCharsets.UTF_8)));
        final StringWriter out = new StringWriter();
        try (JsonGenerator g = new JsonFactory().createGenerator(out)) {
            handler.answer(body, true, g);
        }
        return out.toString();
    }
}
