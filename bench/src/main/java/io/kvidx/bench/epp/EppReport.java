package io.kvidx.bench.epp;

import io.kvidx.bench.Json;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code bench epp} found, as a table and as JSON: per point (prompt set, body mode, rate) the picker's latency
 * percentiles, the achieved rate, errors and its CPU time per request; per prompt set the decision layer's own time
 * in-process; the sanity check of the picks; the goal of issue 34 (token-id prompts, BUFFERED: p50 at most
 * {@value #GOAL_P50_US} µs and p99 at most {@value #GOAL_P99_US} µs).
 *
 * <p><b>Note:</b> one thread.
 */
final class EppReport {
    /** Goal: p50 of the picker's added latency for token-id prompts, µs. */
    static final double GOAL_P50_US = 100;
    /** Goal: p99, µs. */
    static final double GOAL_P99_US = 1_000;

    /**
     * The picks of one prompt set, each prompt sent once.
     *
     * @param prompts        prompts sent.
     * @param pickerAsHome   picks of the pod holding the prompt whole.
     * @param pickerAsRouter picks equal to the decision layer's in this process.
     * @param routerAsHome   the decision layer's picks of that pod.
     */
    record Check(int prompts, int pickerAsHome, int pickerAsRouter, int routerAsHome) {
    }

    /**
     * One measured point.
     *
     * @param set       the prompts.
     * @param mode      the body mode.
     * @param rate      offered requests/s.
     * @param picker    the picker's figures.
     * @param chunks    body messages per request.
     * @param floorRun  the same load on {@link FloorPicker}, or null.
     */
    record Point(EppFixture.PromptSet set, EnvoyRequest.Mode mode, double rate, EppBench.Measured picker, int chunks,
        EppBench.Measured floorRun) {
        EnvoyLoad.Result result() {
            return picker.result();
        }

        double cpuUs() {
            return picker.cpuUs();
        }

        EnvoyLoad.Result floor() {
            return floorRun == null ? null : floorRun.result();
        }
    }

    private final EppBench.Options options;
    private final int cpus;
    private final double load;
    private final long blocks;
    private final long mappedBytes;
    private final Map<String, Check> checks = new LinkedHashMap<>();
    private final Map<String, DecisionTimer.Result> decisions = new LinkedHashMap<>();
    private final List<Point> points = new ArrayList<>();
    private long picked = -1;
    private long fallbacks = -1;

    EppReport(final EppBench.Options options, final int cpus, final double load, final EppFixture fixture) {
        this.options = options;
        this.cpus = cpus;
        this.load = load;
        this.blocks = fixture.blocks();
        this.mappedBytes = fixture.mappedBytes();
    }

    void check(final EppFixture.PromptSet s, final Check c) {
        checks.put(s.name(), c);
    }

    void decision(final EppFixture.PromptSet s, final DecisionTimer.Result r) {
        decisions.put(s.name(), r);
    }

    void point(final Point p) {
        points.add(p);
    }

    void outcomes(final long pickedTotal, final long fallbackTotal) {
        this.picked = pickedTotal;
        this.fallbacks = fallbackTotal;
    }

    String checkLine() {
        final StringBuilder sb = new StringBuilder("picks checked (each prompt once, BUFFERED):");
        for (final Map.Entry<String, Check> e : checks.entrySet()) {
            final Check c = e.getValue();
            sb.append(String.format(Locale.ROOT, " %s: %d/%d the deepest holder, %d/%d as the decision layer;",
                e.getKey(), c.pickerAsHome(), c.prompts(), c.pickerAsRouter(), c.prompts()));
        }
        return sb.toString();
    }

    String progressLine(final Point p) {
        final EnvoyLoad.Result r = p.result();
        return String.format(Locale.ROOT, "%-10s %-20s %,7.0f/s: p50 %8.1f us  p99 %9.1f us  p99.9 %9.1f us"
                + "  achieved %,8.0f/s  errors %d%s  epp cpu %.1f us/req  (pacer late p99 %.0f us)", p.set().name(),
            p.mode().label(), p.rate(), us(r.latency(), 50), us(r.latency(), 99), us(r.latency(), 99.9),
            r.achievedPerS(), r.errors(), r.unfinished() > 0 ? " unanswered " + r.unfinished() : "", p.cpuUs(),
            us(r.late(), 99)) + (p.floor() == null ? "" : String.format(Locale.ROOT, "; floor p50 %.1f us p99 %.1f"
            + " us, cpu %.1f us/req", us(p.floor().latency(), 50), us(p.floor().latency(), 99),
            p.floorRun().cpuUs()));
    }

    String table() {
        final StringBuilder t = new StringBuilder();
        t.append(String.format(Locale.ROOT, "%nkvidx epp added latency: %d pods, index %,d blocks (%.1f MiB), %d"
                + " prompts per set; open loop, %d HTTP/2 connection(s), a stream per request; latency from the"
                + " due time to the answer releasing the request (BUFFERED: headers, answer, body, pick); %d CPUs,"
                + " load %.2f at start%n", options.pods, blocks, mappedBytes / 1048576.0, options.prompts,
            options.connections, cpus, load));
        t.append(String.format(Locale.ROOT, "%-10s %-9s %7s %9s %9s %9s %9s %10s %6s %7s | %-17s | %-17s | %-17s%n",
            "prompt", "mode", "rate/s", "p50 us", "p99 us", "p99.9 us", "max us", "achieved", "errors", "cpu us",
            "floor p50/p99 us", "decide p50/p99 us", "work p50/p99 us"));
        for (final Point p : points) {
            final EnvoyLoad.Result r = p.result();
            final DecisionTimer.Result d = decisions.get(p.set().name());
            final boolean sustained = r.achievedPerS() >= 0.95 * p.rate() && r.unfinished() == 0;
            t.append(String.format(Locale.ROOT, "%-10s %-9s %7.0f %9.1f %9.1f %9.1f %9.1f %10.0f %6d %7.1f |"
                    + " %17s | %17s | %17s%s%n", p.set().name(), shortMode(p.mode()), p.rate(), us(r.latency(), 50),
                us(r.latency(), 99), us(r.latency(), 99.9), r.latency().getMaxValue() / 1e3, r.achievedPerS(),
                r.errors() + r.unfinished(), p.cpuUs(), p.floor() == null ? "-" : pair(p.floor().latency()),
                d == null ? "-" : pair(d.decide()), d == null ? "-" : pair(d.work()),
                sustained ? "" : "  (did not sustain the rate)"));
        }
        t.append("""
              floor: the same load, on the same loopback, on a gRPC server built as the picker's that answers each
                request with a fixed pick at once (no parse, keys, index or decision): gRPC, HTTP/2 and protobuf.
              decide: the decision layer in this process, one request at a time on the same prompts and index (fill
                and kvidx router's plan: keys, prefix query, scores; for text also tokenizing); work: the body's
                parse, decide and the picked pod's held depth, all the picker does per request besides gRPC.
              cpu us: the picker process's CPU time (all its threads: gRPC, GC, JIT) per offered request, over the
                measured run and its drain (the floor's in --json and the progress lines).
            """);
        if (picked >= 0) {
            t.append(String.format(Locale.ROOT, "  picker outcomes over the whole run: %d picked with the index, %d"
                + " by the fallback%n", picked, fallbacks));
        }
        t.append(checkLine()).append('\n');
        t.append(goalLine()).append('\n');
        return t.toString();
    }

    private String goalLine() {
        final StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "goal (token-id prompts, BUFFERED:"
            + " p50 <= %.0f us, p99 <= %.0f us):", GOAL_P50_US, GOAL_P99_US));
        for (final Point p : points) {
            if (p.set().text() || p.mode() != EnvoyRequest.Mode.BUFFERED) {
                continue;
            }
            sb.append(String.format(Locale.ROOT, " %s at %.0f/s %s;", p.set().name(), p.rate(),
                met(p) ? "MET" : "NOT MET"));
        }
        return sb.toString();
    }

    private static boolean met(final Point p) {
        return p.result().unfinished() == 0 && us(p.result().latency(), 50) <= GOAL_P50_US
            && us(p.result().latency(), 99) <= GOAL_P99_US;
    }

    Json json() {
        final Json pts = new Json();
        final Json goal = new Json();
        for (final Point p : points) {
            final EnvoyLoad.Result r = p.result();
            final String key = p.set().name().replace(' ', '_') + "_" + p.mode().label() + "_"
                + Math.round(p.rate());
            pts.put(key, new Json().put("prompt_tokens", p.set().tokens()).put("text", p.set().text())
                .put("mode", p.mode().label()).put("rate", p.rate()).put("body_bytes", p.set().meanBodyBytes())
                .put("body_messages", p.chunks()).put("latency_us", latency(r.latency()))
                .put("achieved_per_s", Math.round(r.achievedPerS())).put("offered", r.offered())
                .put("picked", r.picked()).put("errors", r.errors()).put("unfinished", r.unfinished())
                .put("epp_cpu_us_per_request", p.cpuUs()).put("pacer_late_p99_us", us(r.late(), 99))
                .put("floor_latency_us", p.floor() == null ? null : latency(p.floor().latency()))
                .put("floor_unfinished", p.floor() == null ? null : p.floor().unfinished())
                .put("floor_cpu_us_per_request", p.floor() == null ? null : p.floorRun().cpuUs()));
            if (!p.set().text() && p.mode() == EnvoyRequest.Mode.BUFFERED) {
                goal.put(key, met(p));
            }
        }
        final Json dec = new Json();
        for (final Map.Entry<String, DecisionTimer.Result> e : decisions.entrySet()) {
            final DecisionTimer.Result d = e.getValue();
            dec.put(e.getKey().replace(' ', '_'), new Json().put("parse_us", latency(d.parse()))
                .put("decide_us", latency(d.decide())).put("work_us", latency(d.work()))
                .put("requests", d.decide().getTotalCount()).put("mean_held_blocks", d.decide().getTotalCount() == 0
                    ? 0.0 : (double) d.heldBlocks() / d.decide().getTotalCount()));
        }
        final Json chk = new Json();
        for (final Map.Entry<String, Check> e : checks.entrySet()) {
            final Check c = e.getValue();
            chk.put(e.getKey().replace(' ', '_'), new Json().put("prompts", c.prompts())
                .put("picker_as_deepest_holder", c.pickerAsHome()).put("picker_as_decision_layer", c.pickerAsRouter())
                .put("decision_layer_as_deepest_holder", c.routerAsHome()));
        }
        return new Json().put("bench", "epp").put("cpus", cpus).put("load_average_at_start", load)
            .put("epp", "child process").put("pods", options.pods).put("prompts_per_set", options.prompts)
            .put("index_blocks", blocks).put("index_mapped_mib", mappedBytes / 1048576.0)
            .put("connections", options.connections).put("duration_s", options.durationS)
            .put("points", pts).put("decision_layer", dec).put("checks", chk)
            .put("epp_picked", picked).put("epp_fallbacks", fallbacks).put("goal_p50_100us_p99_1ms", goal);
    }

    private static Json latency(final Histogram h) {
        return new Json().put("p50", us(h, 50)).put("p99", us(h, 99)).put("p999", us(h, 99.9))
            .put("max", h.getMaxValue() / 1e3).put("mean", h.getMean() / 1e3);
    }

    private static String pair(final Histogram h) {
        return String.format(Locale.ROOT, "%.1f / %.1f", us(h, 50), us(h, 99));
    }

    private static String shortMode(final EnvoyRequest.Mode m) {
        return switch (m) {
            case BUFFERED -> "buffered";
            case STREAMED -> "streamed";
            case FULL_DUPLEX_STREAMED -> "duplex";
        };
    }

    static double us(final Histogram h, final double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1e3;
    }

    /** @return the 1-minute load average, or NaN. */
    static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII)
                .split(" ")[0]);
        } catch (final IOException | RuntimeException ex) {
            return Double.NaN;
        }
    }
}
