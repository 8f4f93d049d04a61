package io.kvidx.bench.tokenize;

import io.kvidx.bench.Json;
import io.kvidx.bench.trace.TraceRequest;
import io.kvidx.client.json.MiniJson;
import io.kvidx.tokenize.HfTokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static io.kvidx.bench.tokenize.TokenizeBenchTest.number;
import static io.kvidx.bench.tokenize.TokenizeBenchTest.object;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ConversationReplayTest {
    private static long[] ids(final long from, final long to) {
        return LongStream.range(from, to).toArray();
    }

    private static long[] concat(final long[] a, final long[] b) {
        return LongStream.concat(LongStream.of(a), LongStream.of(b)).toArray();
    }

    @Test
    void shouldRenderSharedHashIdPrefixesAsTextSharedUpToTheLastTurnEnd() {
        final long[] history = ids(100, 130);
        final String a = ConversationReplay.render(concat(history, ids(1000, 1010)));
        final String b = ConversationReplay.render(concat(history, ids(2000, 2010)));
        assertEquals(a, ConversationReplay.render(concat(history, ids(1000, 1010))), "deterministic");
        int common = 0;
        while (common < Math.min(a.length(), b.length()) && a.charAt(common) == b.charAt(common)) {
            common++;
        }
        // 30 shared blocks hold several turn ends: the texts agree through the last one (and the open turn's role).
        final String shared = a.substring(0, common);
        final int turnEnd = shared.lastIndexOf("<|im_end|>\n<|im_start|>");
        assertTrue(turnEnd > 10 * ConversationReplay.BLOCK_CHARS, "most of the history is shared: " + turnEnd);
        assertTrue(b.startsWith(a.substring(0, turnEnd)));
        assertTrue(a.startsWith("<|im_start|>system\n") && a.endsWith("<|im_end|>\n<|im_start|>assistant\n"));
    }

    @Test
    void shouldReplayConversationsWithIdsCheckedAndReportHits() {
        final long[] turn1 = ids(0, 6);
        final long[] turn2 = concat(turn1, ids(6, 12));
        final long[] turn3 = concat(turn2, ids(12, 15));
        final List<TraceRequest> requests = List.of(new TraceRequest(0, 0, 0, turn1),
            new TraceRequest(0, 0, 0, ids(50, 56)), new TraceRequest(0, 0, 0, turn2),
            new TraceRequest(0, 0, 0, turn3));
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final Json report;
        try (HfTokenizer t = HfTokenizer.load(BundledTokenizer.path(), false)) {
            report = ConversationReplay.run(t, requests, 4, 64, 100_000,
                new PrintStream(bytes, true, StandardCharsets.UTF_8));
        }
        final Map<String, Object> json = object(MiniJson.parse(report.toString()), "report");
        final Map<String, Object> cached = object(json.get("prefix_cache"), "prefix_cache");
        final Map<String, Object> split = object(json.get("split_only"), "split_only");
        final Map<String, Object> plain = object(json.get("uncached"), "uncached");
        assertEquals(number(plain, "tokens"), number(cached, "tokens"));
        assertTrue(number(cached, "hits") >= 2, "later turns hit: " + cached);
        assertTrue(number(cached, "tokens_saved") > 0.3 * number(cached, "tokens"), "saved: " + cached);
        assertEquals(0.0, number(split, "hits"), "the split-only cache keeps nothing");
        assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("ids equal to the uncached path for all 4"));
    }

    @Test
    void shouldRunFromTheBenchCommandAndRefuseBadBounds() throws Exception {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        TokenizeBench.run(new String[] {"--replay", "2", "--json"}, out);
        final List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        final Map<String, Object> json = object(MiniJson.parse(lines.getLast()), "report");
        assertEquals(2.0, number(object(json.get("workload"), "workload"), "requests"));
        assertThrows(IllegalArgumentException.class,
            () -> TokenizeBench.run(new String[] {"--replay", "-1"}, out));
        assertThrows(IllegalArgumentException.class,
            () -> TokenizeBench.run(new String[] {"--replay", "2", "--cache-tokens", "0"}, out));
    }
}
