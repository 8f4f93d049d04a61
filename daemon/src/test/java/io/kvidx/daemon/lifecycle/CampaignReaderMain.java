package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.index.StaleWriterException;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A router-like reader in its own process for {@link CrashCampaignTest}: maps the daemon's index read-only and
 * queries the campaign's documents without pause while the daemon is killed and restarted under it.
 *
 * <p>Checks on the spot that a pinned document (held by one pod from the first batches on, never touched again)
 * always answers exactly its full depth for that pod once seen, and nothing for any other pod; records every
 * distinct (slot, document, depth) answer with the time it was first seen, the pod id of every slot it saw, the
 * longest query, and how queries ended, for the test to check against the reference model.
 *
 * <p>Arguments: index dir, output file, stop file, max seconds, heartbeat timeout ms, seed, DOCS files...
 * Output lines: {@code stat <name> <value>}, {@code pod <slot> <pod id>}, {@code obs <slot> <doc> <depth> <µs>},
 * {@code violation <text>}.
 */
public final class CampaignReaderMain {
    private CampaignReaderMain() {
    }

    /**
     * @param args see the class comment.
     */
    public static void main(final String[] args) throws Exception {
        final Path dir = Path.of(args[0]);
        final Path out = Path.of(args[1]);
        final Path stop = Path.of(args[2]);
        final long deadline = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000_000L;
        final long heartbeatTimeoutMs = Long.parseLong(args[4]);
        final SplittableRandom random = new SplittableRandom(Long.parseLong(args[5]));
        final KvStreamModel corpus = new KvStreamModel();
        for (int i = 6; i < args.length; i++) {
            corpus.addDocs(Path.of(args[i]));
        }
        final List<KvStreamModel.Doc> docs = corpus.docs;
        final IndexReaderContext context = new IndexReaderContext().dir(dir).attachTimeoutMs(0)
            .heartbeatTimeoutMs(heartbeatTimeoutMs);
        final Map<Long, Long> observed = new HashMap<>();
        final Map<Integer, String> slotPods = new HashMap<>();
        final List<String> violations = new ArrayList<>();
        final boolean[] pinnedSeen = new boolean[docs.size()];
        final PrefixResult result = new PrefixResult();
        long queries = 0;
        long stale = 0;
        long replaced = 0;
        long attachFailures = 0;
        long maxQueryNs = 0;
        long maxAttachWaitNs = 0;
        long epoch = 0;
        long epochChanges = 0;
        IndexReader reader = null;
        long nextReplacedCheck = 0;
        System.out.println("READER started");
        System.out.flush();
        try {
            while (System.nanoTime() < deadline && !Files.exists(stop)) {
                if (reader == null) {
                    final long t0 = System.nanoTime();
                    try {
                        reader = IndexReader.attach(context);
                        if (epoch != 0 && reader.epoch() != epoch) {
                            epochChanges++;
                        }
                        epoch = reader.epoch();
                    } catch (final IndexException ex) {
                        // Typed: no file yet, or the writer is gone (stale heartbeat). Try again shortly.
                        attachFailures++;
                        Thread.sleep(20);
                        continue;
                    } finally {
                        maxAttachWaitNs = Math.max(maxAttachWaitNs, System.nanoTime() - t0);
                    }
                }
                final IndexReader r = reader;
                final KvStreamModel.Doc doc = docs.get(random.nextInt(docs.size()));
                final long t0 = System.nanoTime();
                try {
                    r.query(doc.keys(), doc.keys().length, null, result);
                } catch (final io.kvidx.client.index.IndexBusyException ex) {
                    // The reader's bound: a writer held the shard (descheduled or killed mid-change); no answer to
                    // check, and the wait was bounded.
                    stale++;
                    maxQueryNs = Math.max(maxQueryNs, System.nanoTime() - t0);
                    continue;
                } catch (final StaleWriterException ex) {
                    // The daemon died inside a change: a shard stays odd until the next daemon repairs it.
                    stale++;
                    maxQueryNs = Math.max(maxQueryNs, System.nanoTime() - t0);
                    continue;
                }
                final long took = System.nanoTime() - t0;
                maxQueryNs = Math.max(maxQueryNs, took);
                queries++;
                final long micros = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
                for (int i = 0; i < result.count(); i++) {
                    final int slot = result.slot(i);
                    final int depth = result.depth(i);
                    observed.merge(((long) slot << 48) | ((long) doc.id() << 16) | depth, micros, Math::min);
                    final String pod = slotPods.computeIfAbsent(slot, s -> podOf(r, s));
                    if (doc.pinnedPod() != null && violations.size() < 50) {
                        if (!doc.pinnedPod().equals(pod)) {
                            violations.add("pinned doc " + doc.id() + " of " + doc.pinnedPod() + " answered depth "
                                + depth + " for slot " + slot + " (" + pod + ")");
                        } else if (depth == doc.keys().length) {
                            pinnedSeen[doc.id()] = true;
                        } else if (pinnedSeen[doc.id()]) {
                            violations.add("pinned doc " + doc.id() + " of " + pod + " answered depth " + depth
                                + " after its full depth " + doc.keys().length + " was seen (torn or lost)");
                        }
                    }
                }
                if (doc.pinnedPod() != null && pinnedSeen[doc.id()] && violations.size() < 50) {
                    boolean present = false;
                    for (int i = 0; i < result.count(); i++) {
                        present |= doc.pinnedPod().equals(slotPods.get(result.slot(i)));
                    }
                    if (!present) {
                        violations.add("pinned doc " + doc.id() + " of " + doc.pinnedPod()
                            + " answered nothing for its pod after its full depth was seen");
                    }
                }
                final long now = System.nanoTime();
                if (now > nextReplacedCheck) {
                    nextReplacedCheck = now + 100_000_000L;
                    if (reader.isReplaced()) {
                        replaced++;
                        reader.close();
                        reader = null;
                        slotPods.clear();
                        continue;
                    }
                    for (final Map.Entry<Integer, String> e : slotPods.entrySet()) {
                        final String pod = podOf(reader, e.getKey());
                        if (!pod.equals(e.getValue()) && violations.size() < 50) {
                            violations.add("slot " + e.getKey() + " changed from " + e.getValue() + " to " + pod
                                + " (pods keep their slots in this campaign)");
                            e.setValue(pod);
                        }
                    }
                }
                if ((queries & 31) == 0) {
                    // Leave the two cores to the daemon and the publishers most of the time.
                    Thread.sleep(1);
                }
            }
        } finally {
            if (reader != null) {
                reader.close();
            }
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out, StandardCharsets.UTF_8))) {
            w.println("stat queries " + queries);
            w.println("stat stale " + stale);
            w.println("stat replaced " + replaced);
            w.println("stat epochChanges " + epochChanges);
            w.println("stat attachFailures " + attachFailures);
            w.println("stat maxQueryMicros " + maxQueryNs / 1000);
            w.println("stat maxAttachMicros " + maxAttachWaitNs / 1000);
            slotPods.forEach((slot, pod) -> w.println("pod " + slot + " " + pod));
            observed.forEach((k, micros) -> w.println("obs " + (k >>> 48) + " " + ((k >>> 16) & 0xFFFF_FFFFL) + " "
                + (k & 0xFFFF) + " " + micros));
            violations.forEach(v -> w.println("violation " + v));
        }
        System.out.println("READER done queries=" + queries + " stale=" + stale + " maxQueryMicros="
            + maxQueryNs / 1000 + " violations=" + violations.size());
    }

    private static String podOf(final IndexReader reader, final int slot) {
        return reader.pod(slot).podId();
    }

    /** Reads an output file. */
    static List<String> lines(final Path out) throws IOException {
        return Files.readAllLines(out, StandardCharsets.UTF_8);
    }
}
