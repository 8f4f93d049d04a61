package io.kvidx.router;

import io.kvidx.routing.PodRole;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link RouterConfig}: the YAML document's keys, the bounds {@code validate} checks, and the command line. */
class RouterConfigTest {
    private static final String FULL = """
        listen: 0.0.0.0:9000
        allow-remote: true
        index: {dir: /dev/shm/elsewhere, cell: blue}
        pods:
          - {id: pod-a, url: 'http://10.0.0.1:8000', model: Qwen/Qwen3-0.6B, role: both}
          - {id: pod-p, url: 'http://10.0.0.2:8000/base', role: prefill}
          - {id: pod-d, url: 'http://10.0.0.3', model: Qwen/Qwen3-0.6B, role: DECODE}
        pod-url-template: 'http://{pod}:8000'
        policy: least-load
        tokenizer: models/qwen3
        timeouts: {connect-ms: 250, first-byte-ms: 5000, request-ms: 60000}
        attempts: 5
        session-header: x-user
        lora-adapters: {my-adapter: Qwen/Qwen3-0.6B}
        health: {interval-ms: 750, path: /ready}
        scrape: {interval-ms: 1500}
        response-headers: true
        max-body-bytes: 65536
        threads: 3
        block-size: 32
        """;

    @Test
    void shouldRefuseAnAddressOtherHostsReachUnlessAllowed() {
        for (final String listen : new String[] {"0.0.0.0:8080", "10.0.0.5:8080", "[::]:8080"}) {
            final RouterConfig c = RouterConfig.fromYaml("listen: '" + listen + "'\n", null);
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, c::validate, listen);
            assertTrue(ex.getMessage().contains("--allow-remote"), ex.getMessage());
            RouterConfig.fromYaml("listen: '" + listen + "'\nallow-remote: true\n", null).validate();
        }
        RouterConfig.fromYaml("listen: 'localhost:8080'\n", null).validate();
    }

    @Test
    void shouldReadEveryKey() {
        final RouterConfig c = RouterConfig.fromYaml(FULL, Path.of("/etc/kvidx")).validate();
        assertEquals("0.0.0.0:9000", c.listen);
        assertEquals(9000, c.listenAddress().getPort());
        assertEquals("/dev/shm/elsewhere", c.dir);
        assertEquals("blue", c.cell);
        assertEquals(List.of(
            new RouterConfig.Pod("pod-a", URI.create("http://10.0.0.1:8000"), "Qwen/Qwen3-0.6B", PodRole.BOTH),
            new RouterConfig.Pod("pod-p", URI.create("http://10.0.0.2:8000/base"), null, PodRole.PREFILL),
            new RouterConfig.Pod("pod-d", URI.create("http://10.0.0.3"), "Qwen/Qwen3-0.6B", PodRole.DECODE)),
            c.pods);
        assertEquals("http://{pod}:8000", c.urlTemplate);
        assertEquals("least-load", c.policy);
        assertEquals(Path.of("/etc/kvidx/models/qwen3"), c.tokenizer, "relative to the file's directory");
        assertEquals(250, c.connectMs);
        assertEquals(5000, c.firstByteMs);
        assertEquals(60000, c.requestMs);
        assertEquals(5, c.attempts);
        assertEquals("x-user", c.sessionHeader);
        assertEquals(Map.of("my-adapter", "Qwen/Qwen3-0.6B"), c.loraAdapters);
        assertEquals(750, c.healthIntervalMs);
        assertEquals("/ready", c.healthPath);
        assertEquals(1500, c.scrapeIntervalMs);
        assertTrue(c.responseHeaders);
        assertEquals(65536, c.maxBodyBytes);
        assertEquals(3, c.threads);
        assertEquals(32, c.blockSize);
        assertNull(c.routingYaml, "no profiles: the policy's document");
        assertTrue(c.routingDocument().contains("least-load"), c.routingDocument());
    }

    @Test
    void shouldKeepTheDefaultsOfAnEmptyDocument() {
        final RouterConfig c = RouterConfig.fromYaml("", null).validate();
        assertEquals(RouterConfig.LISTEN_DEFAULT, c.listen);
        assertEquals(RouterConfig.DIR_DEFAULT, c.dir);
        assertEquals(RouterConfig.CELL_DEFAULT, c.cell);
        assertEquals(RouterConfig.ATTEMPTS_DEFAULT, c.attempts);
        assertEquals(RouterConfig.MAX_BODY_BYTES_DEFAULT, c.maxBodyBytes);
        assertEquals(RouterConfig.HEALTH_INTERVAL_MS_DEFAULT, c.healthIntervalMs);
        assertEquals(0, c.scrapeIntervalMs);
        assertFalse(c.responseHeaders);
        assertTrue(c.pods.isEmpty());
        assertEquals(RouterConfig.POLICY_DEFAULT, c.policy);
    }

    @Test
    void shouldKeepProfilesAndWorkflowAsTheRoutingDocument() {
        final RouterConfig c = RouterConfig.fromYaml("""
            profiles:
              rr: {score: [{type: round-robin}], pick: max-score}
            workflow: {type: single, profile: rr}
            """, null).validate();
        assertTrue(c.routingDocument().contains("round-robin") && c.routingDocument().contains("workflow"),
            c.routingDocument());
    }

    /** Each bad document or value, and a word its error must contain (the key it names). */
    private static final String[][] BAD = {
        {"listen: [1]", "listen"},
        {"listen: nohost", "listen"},
        {"listen: 'h:70000'", "listen"},
        {"index: {dir: /x, shards: 4}", "index: unknown key 'shards'"},
        {"index: /x", "index"},
        {"pods: {a: 1}", "pods"},
        {"pods: [{id: a}]", "pods[].url"},
        {"pods: [{url: 'http://h'}]", "pods[].id"},
        {"pods: [{id: a, url: 'http://h', weight: 2}]", "unknown key 'weight'"},
        {"pods: [{id: a, url: 'ftp://h'}]", "pod a: url"},
        {"pods: [{id: a, url: 'http://h', role: judge}]", "role"},
        {"pods: [{id: a, url: 'http://h'}, {id: a, url: 'http://i'}]", "pod a is listed twice"},
        {"pod-url-template: 'http://h:8000'", "pod-url-template"},
        {"policy: fastest", "policy"},
        {"timeouts: {connect-ms: abc}", "timeouts.connect-ms"},
        {"timeouts: {connect-ms: 0}", "timeouts.connect-ms"},
        {"timeouts: {first-byte-ms: -5}", "timeouts.first-byte-ms"},
        {"timeouts: {request-ms: 1.5}", "timeouts.request-ms"},
        {"timeouts: {bogus: 1}", "timeouts: unknown key 'bogus'"},
        {"attempts: 0", "attempts"},
        {"attempts: 17", "attempts"},
        {"attempts: 99999999999", "attempts: out of range"},
        {"session-header: ''", "session-header"},
        {"lora-adapters: {x: [1]}", "lora-adapters.x"},
        {"health: {interval-ms: -1}", "health.interval-ms"},
        {"health: {path: [a]}", "health.path"},
        {"scrape: 5", "scrape"},
        {"scrape: {interval-ms: x}", "scrape.interval-ms"},
        {"response-headers: yes", "response-headers"},
        {"max-body-bytes: 10", "max-body-bytes"},
        {"max-body-bytes: 1073741824", "max-body-bytes"},
        {"threads: 0", "threads"},
        {"block-size: 0", "block-size"},
        {"block-size: 5000", "block-size"},
        {"colour: red", "unknown key 'colour'"},
        {"listen: [", "not valid YAML"},
        {"- a\n- b", "must be a mapping"}};

    @Test
    void shouldNameTheKeyOfEveryBadValue() {
        for (final String[] bad : BAD) {
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                () -> RouterConfig.fromYaml(bad[0], null).validate(), bad[0]);
            assertTrue(ex.getMessage().contains(bad[1]), bad[0] + " -> " + ex.getMessage());
        }
    }

    @Test
    void shouldParseCommandLinePods() {
        final RouterConfig c = new RouterConfig().podSpec("pod-a=http://10.0.0.1:8000")
            .podSpec("pod-b=http://h:1/base?x=y").podSpec("a@b#1=http://h:2");
        assertEquals(new RouterConfig.Pod("pod-a", URI.create("http://10.0.0.1:8000"), null, PodRole.BOTH),
            c.pods.get(0));
        assertEquals(URI.create("http://h:1/base?x=y"), c.pods.get(1).url(), "the URL is everything after the first =");
        assertEquals("a@b#1", c.pods.get(2).id());
        for (final String bad : List.of("noequals", "=http://h", "a=", "")) {
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                () -> new RouterConfig().podSpec(bad), bad);
            assertTrue(ex.getMessage().contains("--pod expects ID=URL"), ex.getMessage());
        }
        final IllegalArgumentException notUrl = assertThrows(IllegalArgumentException.class,
            () -> new RouterConfig().podSpec("a=b=c"));
        assertTrue(notUrl.getMessage().startsWith("pod a: "), notUrl.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new RouterConfig().podSpec("a=http://[bad"));
    }

    /** The command line over a YAML file: options win, pods add up, --policy and profiles exclude each other. */
    @Test
    void shouldLetTheCommandLineOverrideTheFile() throws Exception {
        final Path dir = Routers.workDir("router-config");
        try {
            final Path file = dir.resolve("router.yaml");
            Files.writeString(file, "listen: 127.0.0.1:7000\nattempts: 2\npods: [{id: pod-a, url: 'http://a:1'}]\n");
            final RouterCommand cmd = new RouterCommand();
            new CommandLine(cmd).parseArgs("--config", file.toString(), "--listen", "127.0.0.1:7001", "--pod",
                "pod-b=http://b:2", "--attempts", "4", "--lora-adapter", "ad=base", "--response-headers",
                "--health-interval-ms", "0");
            final RouterConfig c = cmd.build();
            assertEquals("127.0.0.1:7001", c.listen);
            assertEquals(4, c.attempts);
            assertEquals(List.of("pod-a", "pod-b"), c.pods.stream().map(RouterConfig.Pod::id).toList());
            assertEquals(Map.of("ad", "base"), c.loraAdapters);
            assertTrue(c.responseHeaders);
            assertEquals(0, c.healthIntervalMs);

            final RouterCommand badAdapter = new RouterCommand();
            new CommandLine(badAdapter).parseArgs("--lora-adapter", "nobase");
            assertTrue(assertThrows(IllegalArgumentException.class, badAdapter::build).getMessage()
                .contains("--lora-adapter"));

            Files.writeString(file, "profiles:\n  rr: {score: [{type: round-robin}], pick: max-score}\n"
                + "workflow: {type: single, profile: rr}\n");
            final RouterCommand both = new RouterCommand();
            new CommandLine(both).parseArgs("--config", file.toString(), "--policy", "round-robin");
            assertTrue(assertThrows(IllegalArgumentException.class, both::build).getMessage().contains("--policy"));

            final RouterCommand badLimit = new RouterCommand();
            new CommandLine(badLimit).parseArgs("--max-body-bytes", "5");
            assertTrue(assertThrows(IllegalArgumentException.class, badLimit::build).getMessage()
                .contains("max-body-bytes"));
        } finally {
            Routers.deleteTree(dir);
        }
    }

    /** Every built-in policy's routing document loads into a running router. */
    @Test
    void shouldStartWithEveryPolicy() throws Exception {
        final Path dir = Routers.workDir("router-policies");
        try {
            for (final String policy : RouterConfig.POLICIES) {
                final RouterConfig c = Routers.config(dir);
                c.policy = policy;
                c.healthIntervalMs = 0;
                c.pod("pod-a", "http://127.0.0.1:9", null, null);
                try (RouterServer router = RouterServer.start(c)) {
                    assertTrue(router.port() > 0, policy);
                }
            }
        } finally {
            Routers.deleteTree(dir);
        }
    }
}
