package io.kvidx.daemon.lifecycle;

import io.kvidx.client.keys.RouterKeyHasher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The reference model of a crash campaign: every event the Python publishers' streams sent (their DOCS and LOG
 * files, see vllm_publisher.py's Stream), applied once and in order to a plain map per pod of router key to media
 * bits. Router keys are computed as the daemon computes them: {@link RouterKeyHasher} over the documents' tokens
 * from the chain seed of the pod's model.
 *
 * <p>Also keeps, per pod and document, the deepest prefix the pod held after any event published up to a time, so
 * that a reader's answer observed at time t can be checked against every state published before t.
 */
final class KvStreamModel {
    /** A document: its router keys, and the pod that holds it from the start and never lets it go (or null). */
    record Doc(int id, String pinnedPod, long[] keys) {
    }

    final List<Doc> docs = new ArrayList<>();
    final Map<String, Map<Long, Integer>> held = new LinkedHashMap<>();
    /** Per pod and document: publication time (µs) to the deepest prefix held at or before it. */
    private final Map<String, Map<Integer, TreeMap<Long, Integer>>> maxDepth = new HashMap<>();
    private final Map<Long, Integer> firstDoc = new HashMap<>();
    long batches;
    long events;

    /**
     * Reads a DOCS file; its documents get the next global ids.
     *
     * @return the global id of its first document.
     */
    int addDocs(final Path file) throws IOException {
        final int offset = docs.size();
        final List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        final String[] head = lines.get(0).split(" ");
        final String model = head[1];
        final RouterKeyHasher hasher = new RouterKeyHasher(Integer.parseInt(head[3]));
        final long seed = RouterKeyHasher.chainSeed(model, null, null);
        for (final String line : lines.subList(1, lines.size())) {
            final String[] f = line.split(" ", 4);
            final int[] tokens = Arrays.stream(f[3].split(",")).mapToInt(Integer::parseInt).toArray();
            final long[] keys = new long[tokens.length / hasher.blockSize()];
            hasher.keys(seed, tokens, tokens.length, keys);
            final Doc doc = new Doc(offset + Integer.parseInt(f[1]), "-".equals(f[2]) ? null : f[2], keys);
            docs.add(doc);
            for (final long k : keys) {
                firstDoc.putIfAbsent(k, doc.id());
            }
        }
        return offset;
    }

    /**
     * Applies a LOG file whose documents start at global id {@code offset}.
     *
     * @param pods the pods of the stream (each starts empty).
     */
    void applyLog(final Path file, final int offset, final List<String> pods) throws IOException {
        for (final String pod : pods) {
            held.putIfAbsent(pod, new HashMap<>());
        }
        for (final String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            final String[] f = line.split(" ");
            final long micros = Math.round(Double.parseDouble(f[1]) * 1e6);
            final String pod = f[2];
            final Map<Long, Integer> blocks = held.get(pod);
            if (blocks == null) {
                throw new IllegalStateException("log names pod " + pod + " outside " + pods + ": " + line);
            }
            batches++;
            if ("-".equals(f[3])) {
                continue;
            }
            for (final String ev : f[3].split("\\|")) {
                events++;
                final String[] e = ev.split(",");
                switch (e[0]) {
                    case "S" -> {
                        final int bit = medium(e[1]);
                        final long[] keys = docs.get(offset + Integer.parseInt(e[2])).keys();
                        for (int i = Integer.parseInt(e[3]); i < Integer.parseInt(e[4]); i++) {
                            blocks.merge(keys[i], bit, (a, b) -> a | b);
                        }
                    }
                    case "R" -> {
                        final int bit = medium(e[1]);
                        for (int i = 2; i < e.length; i++) {
                            final String[] ref = e[i].split(":");
                            final long key = docs.get(offset + Integer.parseInt(ref[0]))
                                .keys()[Integer.parseInt(ref[1])];
                            final Integer media = blocks.get(key);
                            if (media != null) {
                                if ((media & ~bit) == 0) {
                                    blocks.remove(key);
                                } else {
                                    blocks.put(key, media & ~bit);
                                }
                            }
                        }
                    }
                    case "C" -> blocks.clear();
                    default -> throw new IllegalStateException("unknown event " + ev + " in " + line);
                }
                // After every event, not every batch: the daemon applies a batch event by event, so a reader can
                // see the state between two events of one batch (a store then a clear, say).
                record(pod, micros);
            }
        }
    }

    private static int medium(final String name) {
        return switch (name) {
            case "GPU" -> 1;
            case "CPU" -> 2;
            default -> throw new IllegalStateException("medium " + name);
        };
    }

    private void record(final String pod, final long micros) {
        final Map<Long, Integer> blocks = held.get(pod);
        final Map<Integer, TreeMap<Long, Integer>> perDoc = maxDepth.computeIfAbsent(pod, p -> new HashMap<>());
        for (final Doc doc : docs) {
            final int depth = depth(blocks, doc.keys());
            final TreeMap<Long, Integer> timeline = perDoc.computeIfAbsent(doc.id(), d -> new TreeMap<>());
            final Map.Entry<Long, Integer> last = timeline.lastEntry();
            if (last == null ? depth > 0 : depth > last.getValue()) {
                timeline.put(micros, depth);
            }
        }
    }

    static int depth(final Map<Long, Integer> blocks, final long[] keys) {
        int depth = 0;
        while (depth < keys.length && blocks.containsKey(keys[depth])) {
            depth++;
        }
        return depth;
    }

    /**
     * @return the deepest prefix of the document the pod held in any state published at or before {@code micros}.
     */
    int maxDepthUpTo(final String pod, final int doc, final long micros) {
        final TreeMap<Long, Integer> timeline = maxDepth.getOrDefault(pod, Map.of()).get(doc);
        if (timeline == null) {
            return 0;
        }
        final Map.Entry<Long, Integer> e = timeline.floorEntry(micros);
        return e == null ? 0 : e.getValue();
    }

    /**
     * @return every router key some pod holds, with its holders.
     */
    Map<Long, Set<String>> holders() {
        final Map<Long, Set<String>> holders = new HashMap<>();
        held.forEach((pod, blocks) -> blocks.keySet().forEach(k -> holders.computeIfAbsent(k, x -> new TreeSet<>())
            .add(pod)));
        return holders;
    }

    /**
     * @return "doc:block" of a key's first occurrence, for messages.
     */
    String where(final long key) {
        final Integer d = firstDoc.get(key);
        if (d == null) {
            return "key " + Long.toUnsignedString(key) + " (in no document)";
        }
        final long[] keys = docs.get(d).keys();
        for (int i = 0; i < keys.length; i++) {
            if (keys[i] == key) {
                return "doc " + d + " block " + i;
            }
        }
        return "doc " + d;
    }
}
