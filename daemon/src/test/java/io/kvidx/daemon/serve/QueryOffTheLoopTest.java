package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestHeartbeat;
import io.kvidx.daemon.membership.Membership;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A query whose tiers take more tier map lookups than an event loop makes for one answer (issue 35: one lookup per
 * matched block per pod, milliseconds on a 750-block prompt over many pods) is answered on a query thread, with the
 * same answer, and counted; a short one stays on the loop. A real index, tier map and HTTP server. Fails with the
 * offload removed (no query counted as offloaded) or with an answer that differs.
 */
@Timeout(60)
class QueryOffTheLoopTest {
    private static final int PODS = 4;
    private static final int BLOCKS = 1_000;

    @TempDir
    Path dir;

    @Test
    void shouldAnswerAQueryWithManyTierLookupsOnAQueryThread() throws Exception {
        final Membership membership = TestFleet.instantMembership();
        final IndexWriterContext writerContext = new IndexWriterContext().dir(dir).cell("test").shardCount(8)
            .capacityBlocks(8_192).maxPods(8).maxChainLength(1_024).tierMapBlocks(2_048).deleteOnClose(true);
        try (IndexWriter writer = IndexWriter.create(writerContext);
             TestHeartbeat _ = new TestHeartbeat(writer);
             IndexHttpServer server = IndexHttpServer.start(new InetSocketAddress("127.0.0.1", 0), 1, false, 1 << 20,
                 new IndexHttpServer.Guards(16, 10_000, null),
                 IndexReader.attach(new IndexReaderContext().dir(dir).cell("test").attachTimeoutMs(1_000)),
                 writer.tiers().path(), null, TestFleet.of(membership, 10_000))) {
            final long[] keys = new long[BLOCKS];
            for (int i = 0; i < BLOCKS; i++) {
                keys[i] = 0x7E57_0000L + i * 104_729L;
            }
            for (int p = 0; p < PODS; p++) {
                final int slot = writer.registerPod("pod-" + p, "m");
                writer.store(slot, keys, 0, BLOCKS - p);
                // Every block on GPU and offloaded to CPU: the tier walk reads every matched block.
                for (int b = 0; b < BLOCKS - p; b++) {
                    writer.tiers().update(slot, keys[b], TierMapDescriptor.MEDIUM_GPU | TierMapDescriptor.MEDIUM_CPU,
                        0, 0);
                }
            }
            final HttpApiClient http = new HttpApiClient(server.port());
            final HttpApiClient.Reply small = http.post("/query_by_hash", body(keys, 100));
            assertEquals(200, small.status(), small.body());
            assertEquals(0, server.queriesOffloaded(), "4 x 100 lookups stay on the loop");

            final HttpApiClient.Reply large = http.post("/query_by_hash", body(keys, BLOCKS));
            assertEquals(200, large.status(), large.body());
            assertEquals(1, server.queriesOffloaded(), "4 x ~1,000 lookups go to a query thread");
            final int bs = 16;
            for (int p = 0; p < PODS; p++) {
                final int tokens = (BLOCKS - p) * bs;
                assertTrue(large.body().contains("\"pod-" + p + "\":{\"longest_matched\":" + tokens + ",\"gpu\":"
                    + tokens + ",\"cpu\":" + tokens), large.body());
            }
            // Pipelined behind it, the next request is answered after it, in order, on the same connection.
            final HttpApiClient.Reply again = http.post("/query_by_hash", body(keys, BLOCKS));
            assertEquals(large.body(), again.body());
            assertEquals(2, server.queriesOffloaded());
            assertEquals(0, server.queriesRefused());
        } finally {
            membership.close();
        }
    }

    private static String body(final long[] keys, final int n) {
        final StringBuilder json = new StringBuilder("{\"router_keys\":[");
        for (int i = 0; i < n; i++) {
            json.append(i == 0 ? "" : ",").append(keys[i]);
        }
        return json.append("],\"model_name\":\"m\"}").toString();
    }
}
