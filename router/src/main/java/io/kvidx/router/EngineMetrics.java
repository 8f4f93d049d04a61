package io.kvidx.router;

/**
 * Reads the load an engine reports on its Prometheus {@code /metrics} page: requests waiting and running, and KV
 * cache usage in [0, 1]. Knows vLLM's names ({@code vllm:num_requests_waiting}, {@code vllm:num_requests_running},
 * {@code vllm:kv_cache_usage_perc}, and the older {@code vllm:gpu_cache_usage_perc}) and SGLang's
 * ({@code sglang:num_queue_reqs}, {@code sglang:num_running_reqs}, {@code sglang:token_usage}). Series of one name
 * with several label sets (several models or ranks on one server) are summed; usage takes the largest.
 *
 * @param waiting requests waiting, or -1 when the page has no such series.
 * @param running requests running, or -1.
 * @param usage   KV cache usage in [0, 1], or -1.
 */
public record EngineMetrics(int waiting, int running, double usage) {
    /** Longest page read; the rest is ignored. */
    public static final int MAX_PAGE_CHARS = 4 << 20;

    /**
     * @param page the text exposition format.
     * @return what it reports.
     */
    public static EngineMetrics parse(final CharSequence page) {
        double waiting = -1;
        double running = -1;
        double usage = -1;
        final int end = Math.min(page.length(), MAX_PAGE_CHARS);
        int i = 0;
        while (i < end) {
            int eol = i;
            while (eol < end && page.charAt(eol) != '\n') {
                eol++;
            }
            if (page.charAt(i) != '#') {
                final int kind = kind(page, i, eol);
                if (kind != 0) {
                    final double v = value(page, i, eol);
                    if (!Double.isNaN(v)) {
                        switch (kind) {
                            case 1 -> waiting = Math.max(0, waiting) + v;
                            case 2 -> running = Math.max(0, running) + v;
                            default -> usage = Math.max(usage, Math.min(1.0, Math.max(0.0, v)));
                        }
                    }
                }
            }
            i = eol + 1;
        }
        return new EngineMetrics(clampInt(waiting), clampInt(running), usage);
    }

    private static int clampInt(final double v) {
        return v < 0 ? -1 : (int) Math.min(Integer.MAX_VALUE, Math.round(v));
    }

    /** 1 waiting, 2 running, 3 usage, 0 none: the metric name up to '{' or ' '. */
    private static int kind(final CharSequence page, final int from, final int to) {
        int n = from;
        while (n < to && page.charAt(n) != '{' && page.charAt(n) != ' ') {
            n++;
        }
        final String name = page.subSequence(from, n).toString();
        return switch (name) {
            case "vllm:num_requests_waiting", "sglang:num_queue_reqs" -> 1;
            case "vllm:num_requests_running", "sglang:num_running_reqs" -> 2;
            case "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage" -> 3;
            default -> 0;
        };
    }

    /** The sample's value: the token after the labels (a timestamp may follow); NaN when unreadable. */
    private static double value(final CharSequence page, final int from, final int to) {
        int p = from;
        boolean quoted = false;
        int depth = 0;
        for (; p < to; p++) {
            final char c = page.charAt(p);
            if (quoted) {
                if (c == '\\') {
                    p++;
                } else if (c == '"') {
                    quoted = false;
                }
            } else if (c == '"') {
                quoted = true;
            } else if (c == '{') {
                depth++;
            } else if (c == '}') {
                depth--;
            } else if (c == ' ' && depth == 0) {
                break;
            }
        }
        while (p < to && page.charAt(p) == ' ') {
            p++;
        }
        int q = p;
        while (q < to && page.charAt(q) != ' ' && page.charAt(q) != '\r') {
            q++;
        }
        try {
            return Double.parseDouble(page.subSequence(p, q).toString());
        } catch (final NumberFormatException ex) {
            return Double.NaN;
        }
    }
}
