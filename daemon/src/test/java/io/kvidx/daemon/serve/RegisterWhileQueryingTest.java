package io.kvidx.daemon.serve;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.kvidx.daemon.serve.IndexHttpApiTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Engines registered and unregistered while routers query: two real publishers hold the same chain; instance 1 stays
 * registered, instance 2 is registered and unregistered again and again while a client queries without pause over a
 * keep-alive connection. Every answer must be a 200 naming instance 1 at the full depth, and instance 2 only while it
 * is registered (at most the full depth), or the documented 503 "unavailable" (the pod table stayed locked past the
 * read bounds: never an internal error); the metrics the API serves must pass promtool.
 *
 * <p><b>How many 503s.</b> A query answers 503 "unavailable" only when the writer is inside a change the query reads
 * (a pod table entry or a shard under its seqlock) for longer than the reader's read bound (50 us), or when the pod
 * table version moved under each of {@code QueryHandler}'s four searches in a row (or each of the pod table view's
 * four rebuilds). Here the writer changes the index only around the ten membership changes (five registrations, each
 * with its engine's 25-block batch; five unregistrations, each taking the pod down and sweeping its bits) and the
 * pings' empty batches, each change a window of microseconds: a 503 needs the writer's thread preempted inside one.
 * Two runs on the development VM (two cores shared with other builds) answered 0 of 103 and 0 of 380 queries 503.
 * The bound: {@value #MAX_UNAVAILABLE_PER_CHANGE} per membership change (the writer preempted inside every change),
 * plus one per {@value #ANSWERS_PER_EXTRA_UNAVAILABLE} answers (on a fast host one long preemption spans several
 * quick queries). A reader that gives up routinely (a version that keeps moving, a bound that is not waited out, a
 * writer that holds a seqlock for milliseconds) answers far more.
 */
@Timeout(180)
class RegisterWhileQueryingTest {
    private static final Path PROMTOOL = Path.of("/usr/bin/promtool");
    /** Membership changes: five registrations and five unregistrations of instance 2. */
    private static final int ROUNDS = 5;
    private static final int MAX_UNAVAILABLE_PER_CHANGE = 1;
    private static final int ANSWERS_PER_EXTRA_UNAVAILABLE = 100;
    private static final Pattern SCORES = Pattern.compile("\"scores\":\\{(.*?)},\"tree_sizes\"");

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    @Test
    void shouldAnswerConsistentlyWhileEnginesComeAndGo() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
            + ",\"model_name\":\"" + base.model() + "\"}";
        final DaemonContext ctx = HttpApiClient.daemonContext(dir);
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            PyPeer a = new PyPeer(PyPeer.VLLM, "--topic", "");
            PyPeer b = new PyPeer(PyPeer.VLLM, "--topic", "")) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            assertEquals(201, http.post("/register", register(1, a, base)).status());
            a.command("store kv_event_base.json");
            b.command("store kv_event_base.json");
            await("instance 1", () -> {
                a.command("ping");
                return http.post("/query", query).body().contains("\"1\":{\"0\":400}");
            });
            final AtomicBoolean stop = new AtomicBoolean();
            final AtomicLong answers = new AtomicLong();
            final AtomicLong withTwo = new AtomicLong();
            final AtomicLong unavailable = new AtomicLong();
            final List<String> wrong = new CopyOnWriteArrayList<>();
            final Thread router = new Thread(() -> {
                final HttpApiClient client = new HttpApiClient(daemon.httpPort());
                while (!stop.get()) {
                    try {
                        final HttpApiClient.Reply r = client.post("/query", query);
                        answers.incrementAndGet();
                        if (r.status() == 503 && r.body().endsWith("\"code\":\"unavailable\"}")) {
                            // Documented: the pod table stayed locked past the read bounds (a preempted writer).
                            unavailable.incrementAndGet();
                            continue;
                        }
                        final Matcher m = SCORES.matcher(r.body());
                        if (r.status() != 200 || !m.find()) {
                            wrong.add(r.status() + " " + r.body());
                            continue;
                        }
                        final String scores = m.group(1);
                        final String rest = scores.replace("\"1\":{\"0\":400}", "");
                        if (!scores.contains("\"1\":{\"0\":400}")
                            || !(rest.isEmpty() || rest.matches(",\"2\":\\{\"0\":(16|32|48|64|80|96|112|128|144|160"
                            + "|176|192|208|224|240|256|272|288|304|320|336|352|368|384|400)}"))) {
                            wrong.add(scores);
                        } else if (!rest.isEmpty()) {
                            withTwo.incrementAndGet();
                        }
                    } catch (final Exception ex) {
                        wrong.add(ex.toString());
                    }
                }
            }, "router");
            router.start();
            for (int round = 0; round < ROUNDS; round++) {
                assertEquals(201, http.post("/register", register(2, b, base)).status());
                await("instance 2 registered, round " + round, () -> {
                    b.command("ping");
                    return http.post("/query", query).body().contains("\"2\":{\"0\":400}");
                });
                // The router has seen it too before it goes (a condition, not a clock: a starved thread waits).
                final long seen = withTwo.get();
                await("the router sees instance 2, round " + round, () -> withTwo.get() > seen);
                assertEquals(200, http.post("/unregister", "{\"instance_id\":2}").status());
                await("instance 2 gone, round " + round, () -> !http.post("/query", query).body()
                    .contains("\"2\":"));
            }
            stop.set(true);
            router.join(TimeUnit.SECONDS.toMillis(20));
            assertEquals(List.of(), wrong.subList(0, Math.min(5, wrong.size())));
            final String counts = answers + " answers, " + withTwo + " with 2, " + unavailable + " unavailable";
            System.out.println(counts);
            assertTrue(withTwo.get() >= ROUNDS && answers.get() > withTwo.get() + unavailable.get(), counts);
            final long allowed = 2L * ROUNDS * MAX_UNAVAILABLE_PER_CHANGE
                + answers.get() / ANSWERS_PER_EXTRA_UNAVAILABLE;
            assertTrue(unavailable.get() <= allowed, () -> counts + ": more 503s than the " + allowed + " that "
                + (2 * ROUNDS) + " membership changes explain (class comment)");

            final String metrics = http.get("/metrics").body();
            assertTrue(Files.isExecutable(PROMTOOL) || System.getenv("CI") == null,
                "CI is set and promtool is missing (apt-get install -y prometheus; .ci/run installs it)");
            if (Files.isExecutable(PROMTOOL)) {
                final Process promtool = new ProcessBuilder(PROMTOOL.toString(), "check", "metrics")
                    .redirectErrorStream(true).start();
                try (var in = promtool.getOutputStream()) {
                    in.write(metrics.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                }
                final String verdict = new String(promtool.getInputStream().readAllBytes(),
                    java.nio.charset.StandardCharsets.UTF_8);
                assertTrue(promtool.waitFor(30, TimeUnit.SECONDS), "promtool hung");
                assertEquals(0, promtool.exitValue(), "promtool check metrics: " + verdict);
            }
        }
    }

    private static String register(final int instance, final PyPeer peer, final Capture c) {
        return "{\"instance_id\":" + instance + ",\"endpoint\":\"" + peer.endpoint + "\",\"replay_endpoint\":\""
            + peer.replayEndpoint + "\",\"model_name\":\"" + c.model() + "\",\"block_size\":16}";
    }
}
