package io.kvidx.bench.trace;

import io.kvidx.client.json.MiniJson;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.util.Map;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * The report of {@code bench trace}: one self-contained HTML page (charts as embedded PNGs drawn with XChart, the
 * run's parameters and the JSON line) plus the PNGs beside it: query and event-to-visible latency vs offered load,
 * achieved vs offered throughput (invalid points marked), and prefix hit rate per routing policy. A sweep with no
 * latency at all ({@code --transport inproc}: no router process) gets a line saying so instead of the latency chart.
 */
final class TraceReport {
    private static final int WIDTH = 720;
    private static final int HEIGHT = 420;

    private TraceReport() {
    }

    /**
     * @param dir     output directory (created).
     * @param title   page title (trace, pods, date).
     * @param points  the sweep.
     * @param routing per-policy results.
     * @param json    the run's JSON line.
     * @return the HTML file.
     * @throws IOException when a file cannot be written.
     */
    static Path write(final Path dir, final String title, final List<TraceReplay.Point> points,
        final List<RoutingSim.Result> routing, final String json) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(dir);
        final List<Double> offered = new ArrayList<>();
        final List<Double> achieved = new ArrayList<>();
        final List<Double> queryP50 = new ArrayList<>();
        final List<Double> queryP99 = new ArrayList<>();
        final List<Double> e2vP50 = new ArrayList<>();
        final List<Double> e2vP99 = new ArrayList<>();
        final List<Double> invalidX = new ArrayList<>();
        final List<Double> invalidY = new ArrayList<>();
        for (final TraceReplay.Point p : points) {
            final double x = p.offeredOpsPerS() / 1e6;
            offered.add(x);
            achieved.add(p.blockOpsPerS() / 1e6);
            queryP50.add(num(p.router(), "query_p50_ns") / 1e3);
            queryP99.add(num(p.router(), "query_p99_ns") / 1e3);
            e2vP50.add(num(p.router(), "e2v_p50_us"));
            e2vP99.add(num(p.router(), "e2v_p99_us"));
            if (!p.valid()) {
                invalidX.add(x);
                invalidY.add(p.blockOpsPerS() / 1e6);
            }
        }
        final XYChart latency = xy("Latency vs offered load", "offered load (M block ops/s)", "latency (us)");
        latency.getStyler().setYAxisLogarithmic(true);
        positive(latency, "query p50", offered, queryP50);
        positive(latency, "query p99", offered, queryP99);
        positive(latency, "event-to-visible p50", offered, e2vP50);
        positive(latency, "event-to-visible p99", offered, e2vP99);
        final XYChart throughput = xy("Throughput vs offered load", "offered load (M block ops/s)",
            "achieved (M block ops/s)");
        throughput.addSeries("achieved", offered, achieved);
        throughput.addSeries("offered = achieved", offered, offered).setMarker(SeriesMarkers.NONE);
        if (!invalidX.isEmpty()) {
            throughput.addSeries("invalid (writer or publisher > 10 % behind)", invalidX, invalidY)
                .setMarker(SeriesMarkers.CROSS);
        }
        final CategoryChart hits = new CategoryChartBuilder().width(WIDTH).height(HEIGHT)
            .title("Prefix hit rate per routing policy").xAxisTitle("policy").yAxisTitle("blocks reused / requested")
            .build();
        hits.getStyler().setLegendVisible(false);
        hits.getStyler().setYAxisMin(0.0);
        final List<String> names = new ArrayList<>();
        final List<Double> rates = new ArrayList<>();
        for (final RoutingSim.Result r : routing) {
            names.add(r.policy());
            rates.add(r.hitRate());
        }
        hits.addSeries("hit rate", names, rates);
        final StringBuilder html = new StringBuilder(1 << 16);
        html.append("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kvidx bench trace</title>")
            .append("<style>body{font-family:sans-serif;max-width:760px;margin:2em auto}pre{white-space:pre-wrap;")
            .append("font-size:12px;background:#f4f4f4;padding:1em}</style></head><body>\n<h1>kvidx bench trace</h1>\n")
            .append("<p>").append(escape(title)).append("</p>\n");
        final boolean timed = latency.getSeriesMap().size() > 0;
        if (!timed) {
            html.append("<p>No query or event-to-visible latency in this sweep: the events were applied in-process "
                + "(<code>--transport inproc</code>), with no router process.</p>\n");
        }
        for (final Object[] chart : timed ? new Object[][] {{"latency", latency}, {"throughput", throughput},
            {"hit-rate", hits}} : new Object[][] {{"throughput", throughput}, {"hit-rate", hits}}) {
            final Path png = dir.resolve("trace-" + chart[0] + ".png");
            BitmapEncoder.saveBitmap((org.knowm.xchart.internal.chartpart.Chart<?, ?>) chart[1], png.toString(),
                BitmapEncoder.BitmapFormat.PNG);
            html.append("<img alt=\"").append(chart[0]).append("\" src=\"data:image/png;base64,")
                .append(Base64.getEncoder().encodeToString(Files.readAllBytes(png))).append("\">\n");
        }
        html.append("<h2>Sweep</h2>\n<table border=\"1\" cellpadding=\"4\"><tr><th>window ms</th>")
            .append("<th>offered M ops/s</th><th>achieved M ops/s</th><th>writer lag ms</th>")
            .append("<th>publisher lag ms</th><th>valid</th></tr>\n");
        for (final TraceReplay.Point p : points) {
            html.append(String.format("<tr><td>%d</td><td>%.2f</td><td>%.2f</td><td>%.0f</td><td>%.0f</td><td>%s"
                    + "</td></tr>%n", p.windowMs(), p.offeredOpsPerS() / 1e6, p.blockOpsPerS() / 1e6,
                p.writerLagMs(), p.publisherLagMs(), p.valid()));
        }
        html.append("</table>\n<h2>JSON</h2>\n<pre>").append(escape(json)).append("</pre>\n</body></html>\n");
        final Path file = dir.resolve("trace-report.html");
        Files.writeString(file, html, StandardCharsets.UTF_8);
        return file;
    }

    /** Adds the points with a positive value (a logarithmic axis takes no other; 0 means no sample). */
    private static void positive(final XYChart chart, final String name, final List<Double> x, final List<Double> y) {
        final List<Double> xs = new ArrayList<>();
        final List<Double> ys = new ArrayList<>();
        for (int i = 0; i < x.size(); i++) {
            if (y.get(i) > 0) {
                xs.add(x.get(i));
                ys.add(y.get(i));
            }
        }
        if (!xs.isEmpty()) {
            chart.addSeries(name, xs, ys);
        }
    }

    private static XYChart xy(final String title, final String x, final String y) {
        final XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle(x)
            .yAxisTitle(y).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        return chart;
    }

    /**
     * @param json a JSON object.
     * @param key  a key anywhere in it.
     * @return its value written back as JSON ({@code null} when absent).
     */
    static String raw(final String json, final String key) {
        return MiniJson.write(find(MiniJson.parse(json), key));
    }

    /**
     * A number in a JSON document, with kvidx's one JSON reader.
     *
     * @param json a JSON document (the router process's result, the bench's JSON line).
     * @param path keys: the first is found depth first, in document order; each next one among the children of the
     *             value found so far.
     * @return the number, or NaN when the path leads nowhere or to something else.
     * @throws IllegalArgumentException when the text is not JSON.
     */
    static double num(final String json, final String... path) {
        Object v = find(MiniJson.parse(json), path[0]);
        for (int k = 1; k < path.length && v instanceof Map<?, ?> m; k++) {
            v = m.get(path[k]);
        }
        return v instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    private static Object find(final Object node, final String key) {
        if (node instanceof Map<?, ?> m) {
            if (m.containsKey(key)) {
                return m.get(key);
            }
            for (final Object child : m.values()) {
                final Object found = find(child, key);
                if (found != null) {
                    return found;
                }
            }
        } else if (node instanceof List<?> l) {
            for (final Object child : l) {
                final Object found = find(child, key);
                if (found != null) {
                    return found;
                }
            }
        }
        return null;
    }

    private static String escape(final String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
