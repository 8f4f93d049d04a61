package io.kvidx.daemon.serve;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Dynamo's recorded answers (src/test/resources/dynamo/dynamo-transcript.jsonl, its provenance in the README beside
 * it): the header line with the run's publisher endpoints, then one step per line.
 *
 * @param header the first line.
 * @param steps  the requests, in order.
 */
record DynamoTranscript(Map<String, Object> header, List<Step> steps) {
    static final String RESOURCE = "/dynamo/dynamo-transcript.jsonl";
    private static final JsonFactory JSON = new JsonFactory();
    private static final Pattern REPEATED = Pattern.compile("\\[(\\d+) items: the capture repeated]");

    /**
     * One recorded request and Dynamo's answer.
     *
     * @param line the line's fields.
     */
    record Step(Map<String, Object> line) {
        int number() {
            return ((Number) line.get("step")).intValue();
        }

        String name() {
            return (String) line.get("name");
        }

        String method() {
            return (String) line.get("method");
        }

        String path() {
            return (String) line.get("path");
        }

        int status() {
            return ((Number) line.get("status")).intValue();
        }

        /**
         * @param name a header's name, lower case.
         * @return Dynamo's answer's value of it, or null.
         */
        String responseHeader(final String name) {
            return (String) ((Map<?, ?>) line.get("response_headers")).get(name);
        }

        @SuppressWarnings("unchecked")
        Map<String, String> headers() {
            return (Map<String, String>) line.get("request_headers");
        }

        /**
         * @param tokens    the base capture's token ids (a large body is them repeated).
         * @param endpoints Dynamo run's endpoints to this run's.
         * @return the request body, or null for none; a body recorded by its hash is rebuilt and checked against it.
         */
        byte[] body(final int[] tokens, final Map<String, String> endpoints) throws Exception {
            final String recorded = (String) line.get("request_body");
            if (recorded != null) {
                return replace(recorded, endpoints).getBytes(StandardCharsets.UTF_8);
            }
            final String sha = (String) line.get("request_body_sha256");
            if (sha == null) {
                return null;
            }
            final Matcher m = REPEATED.matcher((String) line.get("request_summary"));
            if (!m.find()) {
                throw new AssertionError("step " + number() + ": cannot rebuild " + line.get("request_summary"));
            }
            final int count = Integer.parseInt(m.group(1));
            // As the recorder's Python wrote it: json.dumps with its default separators.
            final StringBuilder b = new StringBuilder(count * 6).append("{\"token_ids\": [");
            for (int i = 0; i < count; i++) {
                b.append(i == 0 ? "" : ", ").append(tokens[i % tokens.length]);
            }
            final byte[] body = b.append("], \"model_name\": \"Qwen/Qwen3-0.6B\"}").toString()
                .getBytes(StandardCharsets.UTF_8);
            assertEquals(sha, DynamoTranscriptReplayTest.sha256(body), "step " + number() + ": the rebuilt body");
            return body;
        }

        /**
         * @param endpoints Dynamo run's endpoints to this run's.
         * @return Dynamo's answer as JSON values, or null when it was not JSON (a plain-text or empty body).
         */
        Object response(final Map<String, String> endpoints) throws IOException {
            if (!Boolean.TRUE.equals(line.get("json"))) {
                return null;
            }
            return json(replace((String) line.get("response_body"), endpoints));
        }
    }

    static DynamoTranscript load() throws Exception {
        final List<String> lines = DynamoTranscriptReplayTest.lines(RESOURCE);
        @SuppressWarnings("unchecked")
        final Map<String, Object> header = (Map<String, Object>) json(lines.get(0));
        assertEquals("header", header.get("kind"));
        final List<Step> steps = new ArrayList<>();
        for (final String l : lines.subList(1, lines.size())) {
            @SuppressWarnings("unchecked")
            final Map<String, Object> step = (Map<String, Object>) json(l);
            steps.add(new Step(step));
        }
        return new DynamoTranscript(header, steps);
    }

    /**
     * @param name P1..P4.
     * @return that publisher's endpoint in Dynamo's run.
     */
    String endpoint(final String name) {
        return (String) ((Map<?, ?>) header.get("endpoints")).get(name);
    }

    private static String replace(final String text, final Map<String, String> endpoints) {
        String s = text;
        for (final var e : endpoints.entrySet()) {
            s = s.replace(e.getKey(), e.getValue());
        }
        return s;
    }

    /**
     * @param text a JSON document.
     * @return it as maps (in order), lists, strings, longs (big integers past 2^63), doubles, booleans and nulls;
     * null for an empty text.
     */
    static Object json(final String text) throws IOException {
        if (text == null || text.isEmpty()) {
            return null;
        }
        try (JsonParser p = JSON.createParser(text)) {
            p.nextToken();
            final Object value = value(p);
            if (p.nextToken() != null) {
                throw new IOException("trailing data after JSON: " + text);
            }
            return value;
        }
    }

    private static Object value(final JsonParser p) throws IOException {
        final JsonToken t = p.currentToken();
        if (t == JsonToken.START_OBJECT) {
            final Map<String, Object> m = new LinkedHashMap<>();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                final String name = p.currentName();
                p.nextToken();
                m.put(name, value(p));
            }
            return m;
        }
        if (t == JsonToken.START_ARRAY) {
            final List<Object> l = new ArrayList<>();
            while (p.nextToken() != JsonToken.END_ARRAY) {
                l.add(value(p));
            }
            return l;
        }
        return switch (t) {
            case VALUE_STRING -> p.getText();
            case VALUE_NUMBER_INT -> p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? p.getBigIntegerValue()
                : (Object) p.getLongValue();
            case VALUE_NUMBER_FLOAT -> p.getDoubleValue();
            case VALUE_TRUE -> Boolean.TRUE;
            case VALUE_FALSE -> Boolean.FALSE;
            case VALUE_NULL -> null;
            default -> throw new IOException("unexpected " + t);
        };
    }
}
