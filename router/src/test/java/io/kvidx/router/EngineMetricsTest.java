package io.kvidx.router;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link EngineMetrics}: what the router reads from vLLM's and SGLang's Prometheus pages. */
class EngineMetricsTest {
    /** The shape of a vLLM 0.x page (HELP/TYPE lines, engine and model labels, other series around). */
    private static final String VLLM = """
        # HELP vllm:num_requests_running Number of requests in model execution batches.
        # TYPE vllm:num_requests_running gauge
        vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-0.6B"} 3.0
        # HELP vllm:num_requests_waiting Number of requests waiting to be processed.
        # TYPE vllm:num_requests_waiting gauge
        vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-0.6B"} 7.0
        # HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
        # TYPE vllm:kv_cache_usage_perc gauge
        vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.25
        # HELP vllm:num_requests_running_total Not a real series: a longer name must not count.
        vllm:num_requests_running_total{engine="0"} 100.0
        vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-0.6B"} 1234.0
        vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="4096"} 1.0
        """;

    private static final String SGLANG = """
        # HELP sglang:num_running_reqs The number of running requests.
        # TYPE sglang:num_running_reqs gauge
        sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
        # HELP sglang:num_queue_reqs The number of requests in the waiting queue.
        # TYPE sglang:num_queue_reqs gauge
        sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
        # HELP sglang:token_usage The token usage.
        # TYPE sglang:token_usage gauge
        sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.5
        sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.9
        """;

    @Test
    void shouldReadVllmsPage() {
        assertEquals(new EngineMetrics(7, 3, 0.25), EngineMetrics.parse(VLLM));
    }

    @Test
    void shouldReadSglangsPage() {
        assertEquals(new EngineMetrics(2, 4, 0.5), EngineMetrics.parse(SGLANG));
    }

    @Test
    void shouldReadTheOlderVllmUsageName() {
        assertEquals(new EngineMetrics(-1, -1, 0.75), EngineMetrics.parse(
            "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.75\n"));
    }

    @Test
    void shouldSumRequestsOverSeriesAndTakeTheLargestUsage() {
        final String page = """
            vllm:num_requests_running{engine="0",model_name="a"} 1.0
            vllm:num_requests_running{engine="1",model_name="a"} 2.0
            vllm:num_requests_running{engine="0",model_name="b"} 3.0
            vllm:num_requests_waiting{engine="0",model_name="a"} 0.0
            vllm:kv_cache_usage_perc{engine="0",model_name="a"} 0.1
            vllm:kv_cache_usage_perc{engine="1",model_name="a"} 0.6
            vllm:kv_cache_usage_perc{engine="0",model_name="b"} 0.3
            """;
        assertEquals(new EngineMetrics(0, 6, 0.6), EngineMetrics.parse(page));
    }

    @Test
    void shouldSayMinusOneForSeriesThePageLacks() {
        assertEquals(new EngineMetrics(-1, -1, -1), EngineMetrics.parse(""));
        assertEquals(new EngineMetrics(-1, -1, -1), EngineMetrics.parse("# TYPE vllm:num_requests_running gauge\n"
            + "# vllm:num_requests_waiting 3\nprocess_cpu_seconds_total 12.5\n"));
        assertEquals(new EngineMetrics(-1, 5, -1), EngineMetrics.parse("vllm:num_requests_running 5"));
    }

    @Test
    void shouldReadValuesAfterAwkwardLabelsAndBeforeTimestamps() {
        final String page = "vllm:num_requests_running{model_name=\"a b} \\\" {c\",engine=\"0\"} 9.0 1700000000000\r\n"
            + "vllm:num_requests_waiting{model_name=\"x\"}   4e0\n"
            + "vllm:kv_cache_usage_perc  0.5\n";
        assertEquals(new EngineMetrics(4, 9, 0.5), EngineMetrics.parse(page));
    }

    @Test
    void shouldIgnoreUnreadableValuesAndClampTheRest() {
        assertEquals(new EngineMetrics(-1, 2, 1.0), EngineMetrics.parse("""
            vllm:num_requests_waiting{engine="0"} NaN
            vllm:num_requests_waiting{engine="1"} lots
            vllm:num_requests_running{engine="0"} 2.0
            vllm:kv_cache_usage_perc{engine="0"} 1.5
            """));
        assertEquals(new EngineMetrics(Integer.MAX_VALUE, -1, 0.0), EngineMetrics.parse("""
            vllm:num_requests_waiting 1e300
            vllm:kv_cache_usage_perc -0.2
            """));
    }

    @Test
    void shouldReadNoFurtherThanTheBound() {
        final StringBuilder page = new StringBuilder("vllm:num_requests_waiting 1\n");
        final String filler = "# " + "x".repeat(1_000) + "\n";
        while (page.length() < EngineMetrics.MAX_PAGE_CHARS) {
            page.append(filler);
        }
        page.append("vllm:num_requests_running 8\n");
        assertEquals(new EngineMetrics(1, -1, -1), EngineMetrics.parse(page));
    }
}
