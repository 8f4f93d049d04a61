package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A reader process for {@link AttachWhileRestartingTest}: attaches to the cell again and again while the daemon is
 * killed, restarted, frozen in the middle of a change or of its repair, and uses each reader it gets for a few
 * queries of a pinned chain (one pod holds all of it, always) and reads of every pod slot's entry.
 *
 * <p>Every call must end, within a bound, with a result or a typed {@link IndexException}: a watchdog thread
 * watches the call in progress and, past the bound, writes where it is stuck (its stack) and exits with status 4.
 * Any other exception, or a pinned depth other than the chain's length, is a violation. Output lines:
 * {@code stat <name> <value>}, {@code outcome <what> <count>}, {@code violation <text>}, {@code hung <text>}.
 * Each round also queries a churned chain (no depth is checked: it changes; the query must end, typed or not).
 *
 * <p>Arguments: index dir, output file, stop file, max seconds, heartbeat timeout ms, call bound ms, pinned pod,
 * pinned chain seed, pinned chain length, churned chain seed, churned chain length.
 */
public final class AttachProbeMain {
    private AttachProbeMain() {
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
        final long boundMs = Long.parseLong(args[5]);
        final String pinnedPod = args[6];
        final TestEngine.Chain pinned = TestEngine.Chain.random(Long.parseLong(args[7]), Integer.parseInt(args[8]));
        final TestEngine.Chain churned = TestEngine.Chain.random(Long.parseLong(args[9]), Integer.parseInt(args[10]));
        final Map<String, Long> outcomes = new TreeMap<>();
        final Map<String, Long> maxMicros = new TreeMap<>();
        final List<String> violations = new ArrayList<>();
        final AtomicReference<String> call = new AtomicReference<>();
        final AtomicLong callStart = new AtomicLong();
        final Thread prober = Thread.currentThread();
        final Thread watchdog = Thread.ofPlatform().daemon().name("probe-watchdog").start(() -> {
            while (true) {
                final String what = call.get();
                final long started = callStart.get();
                if (what != null && System.nanoTime() - started > boundMs * 1_000_000L) {
                    final String stack = String.join("\n    ", Arrays.stream(prober.getStackTrace())
                        .map(StackTraceElement::toString).toList());
                    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out, StandardCharsets.UTF_8))) {
                        w.println("hung " + what + " has not returned after " + boundMs + " ms, at:\n    " + stack);
                    } catch (final Exception ex) {
                        // nothing more to do
                    }
                    System.out.println("PROBE hung in " + what);
                    System.out.flush();
                    Runtime.getRuntime().halt(4);
                }
                try {
                    Thread.sleep(20);
                } catch (final InterruptedException ex) {
                    return;
                }
            }
        });
        final IndexReaderContext context = new IndexReaderContext().dir(dir).attachTimeoutMs(200)
            .heartbeatTimeoutMs(heartbeatTimeoutMs);
        final PrefixResult result = new PrefixResult();
        long sessions = 0;
        System.out.println("PROBE started");
        System.out.flush();
        while (System.nanoTime() < deadline && !Files.exists(stop)) {
            final IndexReader reader;
            try {
                reader = timed("attach", call, callStart, maxMicros, () -> IndexReader.attach(context));
            } catch (final IndexException ex) {
                outcomes.merge("attach " + ex.getClass().getSimpleName(), 1L, Long::sum);
                Thread.sleep(5);
                continue;
            } catch (final RuntimeException ex) {
                violations.add("attach threw " + ex);
                continue;
            }
            sessions++;
            outcomes.merge("attach ok", 1L, Long::sum);
            try {
                for (int q = 0; q < 10; q++) {
                    int slot = -1;
                    for (int s = 0; s < reader.maxPods(); s++) {
                        final int at = s;
                        final IndexReader.PodInfo info = timed("pod(" + s + ")", call, callStart, maxMicros,
                            () -> reader.pod(at));
                        if (pinnedPod.equals(info.podId()) && reader.isAlive(s)) {
                            slot = s;
                        }
                    }
                    timed("query", call, callStart, maxMicros, () -> reader.query(pinned.keys(), pinned.length(),
                        null, result));
                    if (slot < 0) {
                        violations.add("session " + sessions + ": pinned pod " + pinnedPod + " not alive");
                    } else if (result.depthOf(slot) != pinned.length()) {
                        violations.add("session " + sessions + ": pinned pod answered depth " + result.depthOf(slot)
                            + ", it holds " + pinned.length() + " (torn or lost)");
                    }
                    outcomes.merge("query ok", 1L, Long::sum);
                    try {
                        timed("query", call, callStart, maxMicros, () -> reader.query(churned.keys(),
                            churned.length(), null, result));
                        outcomes.merge("churned ok", 1L, Long::sum);
                    } catch (final IndexException ex) {
                        // A shard of the churned chain left odd by a frozen or killed writer: typed, after the
                        // heartbeat timeout.
                        outcomes.merge("churned " + ex.getClass().getSimpleName(), 1L, Long::sum);
                    }
                }
            } catch (final IndexException ex) {
                outcomes.merge("query " + ex.getClass().getSimpleName(), 1L, Long::sum);
            } catch (final RuntimeException ex) {
                violations.add("session " + sessions + " threw " + ex);
            } finally {
                reader.close();
            }
            if (violations.size() > 50) {
                break;
            }
        }
        watchdog.interrupt();
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out, StandardCharsets.UTF_8))) {
            w.println("stat sessions " + sessions);
            maxMicros.forEach((k, v) -> w.println("stat max " + k + " " + v));
            outcomes.forEach((k, v) -> w.println("outcome " + k.replace(' ', '_') + " " + v));
            violations.forEach(v -> w.println("violation " + v));
        }
        System.out.println("PROBE done sessions=" + sessions + " outcomes=" + outcomes + " violations="
            + violations.size());
    }

    /** A call that may throw. */
    @FunctionalInterface
    interface Call<T> {
        T run();
    }

    private static <T> T timed(final String what, final AtomicReference<String> call, final AtomicLong start,
        final Map<String, Long> maxMicros, final Call<T> body) {
        final long t0 = System.nanoTime();
        start.set(t0);
        call.set(what);
        try {
            return body.run();
        } finally {
            call.set(null);
            maxMicros.merge(what.startsWith("pod(") ? "pod" : what, (System.nanoTime() - t0) / 1000, Math::max);
        }
    }
}
