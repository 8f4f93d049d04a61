package io.kvidx.bench.trace;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPInputStream;

/**
 * Reads a Mooncake-format request trace: one JSON object per line with the integer fields {@code timestamp},
 * {@code input_length}, {@code output_length} and the integer array {@code hash_ids} (other fields are skipped).
 * This is a reader for that line format only, not a general JSON parser: a line it cannot read fails the load with
 * its line number. Files ending in {@code .gz} are gunzipped. Requests come back sorted by timestamp (stable).
 */
public final class TraceFile {
    /** Class-path resource of the committed Mooncake conversation trace. */
    public static final String DEFAULT_RESOURCE = "/traces/mooncake-conversation.jsonl.gz";

    private TraceFile() {
    }

    /**
     * @return the committed Mooncake conversation trace (12,031 requests), from the class path.
     * @throws IOException when the resource is missing or unreadable.
     */
    public static List<TraceRequest> loadDefault() throws IOException {
        final InputStream in = TraceFile.class.getResourceAsStream(DEFAULT_RESOURCE);
        if (in == null) {
            throw new IOException("trace resource " + DEFAULT_RESOURCE + " is not on the class path");
        }
        return read(new GZIPInputStream(in), DEFAULT_RESOURCE);
    }

    /**
     * @param file a trace file ({@code .jsonl} or {@code .jsonl.gz}).
     * @return its requests, sorted by timestamp.
     * @throws IOException when the file cannot be read or a line is malformed.
     */
    public static List<TraceRequest> load(final Path file) throws IOException {
        final InputStream raw = Files.newInputStream(file);
        return read(file.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw, file.toString());
    }

    /**
     * @param in   the trace lines (closed on return).
     * @param name name for error messages.
     * @return the requests, sorted by timestamp.
     * @throws IOException when a line is malformed.
     */
    public static List<TraceRequest> read(final InputStream in, final String name) throws IOException {
        final List<TraceRequest> out = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            int number = 0;
            while ((line = r.readLine()) != null) {
                number++;
                if (line.isBlank()) {
                    continue;
                }
                try {
                    out.add(parse(line));
                } catch (final IllegalArgumentException ex) {
                    throw new IOException(name + ":" + number + ": " + ex.getMessage(), ex);
                }
            }
        }
        out.sort((a, b) -> Long.compare(a.timestampMs(), b.timestampMs()));
        return out;
    }

    /**
     * @param line one trace line.
     * @return the request.
     * @throws IllegalArgumentException when a field is missing, negative or not an integer.
     */
    static TraceRequest parse(final String line) {
        final long timestamp = longField(line, "timestamp");
        final long input = longField(line, "input_length");
        final long output = longField(line, "output_length");
        if (timestamp < 0 || input < 0 || output < 0 || input > Integer.MAX_VALUE || output > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("negative or oversized field");
        }
        return new TraceRequest(timestamp, (int) input, (int) output, hashIds(line));
    }

    private static int valueStart(final String line, final String key) {
        final String quoted = "\"" + key + "\"";
        final int k = line.indexOf(quoted);
        if (k < 0) {
            throw new IllegalArgumentException("no \"" + key + "\" field");
        }
        int i = k + quoted.length();
        while (i < line.length() && Character.isWhitespace(line.charAt(i))) {
            i++;
        }
        if (i >= line.length() || line.charAt(i) != ':') {
            throw new IllegalArgumentException("no ':' after \"" + key + "\"");
        }
        i++;
        while (i < line.length() && Character.isWhitespace(line.charAt(i))) {
            i++;
        }
        return i;
    }

    private static long longField(final String line, final String key) {
        final int start = valueStart(line, key);
        int end = start;
        while (end < line.length() && (Character.isDigit(line.charAt(end)) || line.charAt(end) == '-')) {
            end++;
        }
        // Mooncake writes integers; a float timestamp such as 12.0 keeps its integer part.
        if (end < line.length() && line.charAt(end) == '.') {
            final int dot = end;
            end++;
            while (end < line.length() && Character.isDigit(line.charAt(end))) {
                end++;
            }
            return parseLong(line.substring(start, dot), key);
        }
        return parseLong(line.substring(start, end), key);
    }

    private static long parseLong(final String s, final String key) {
        try {
            return Long.parseLong(s);
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException("\"" + key + "\" is not an integer: '" + s + "'", ex);
        }
    }

    private static long[] hashIds(final String line) {
        int i = valueStart(line, "hash_ids");
        if (i >= line.length() || line.charAt(i) != '[') {
            throw new IllegalArgumentException("\"hash_ids\" is not an array");
        }
        i++;
        long[] ids = new long[32];
        int n = 0;
        while (true) {
            while (i < line.length() && (Character.isWhitespace(line.charAt(i)) || line.charAt(i) == ',')) {
                i++;
            }
            if (i >= line.length()) {
                throw new IllegalArgumentException("\"hash_ids\" is not closed");
            }
            if (line.charAt(i) == ']') {
                return Arrays.copyOf(ids, n);
            }
            final int start = i;
            while (i < line.length() && Character.isDigit(line.charAt(i))) {
                i++;
            }
            if (i == start) {
                throw new IllegalArgumentException("\"hash_ids\" holds a non-integer at column " + start);
            }
            if (n == ids.length) {
                ids = Arrays.copyOf(ids, n * 2);
            }
            ids[n++] = parseLong(line.substring(start, i), "hash_ids");
        }
    }
}
