package io.kvidx.daemon.cli;

import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.DaemonSettings;
import io.kvidx.ffm.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kvidx daemon --print-config} and the configuration's two faces: every YAML key has a command-line option
 * and the reverse (both enumerated: picocli's options, the YAML reader's keys, the printed keys), each option sets
 * exactly what its key sets, the printed YAML reads back to the same configuration, and a bad value fails with exit
 * code 2 and one line naming the option or the file and key, with the accepted range.
 */
@Timeout(60)
class DaemonConfigTest {
    /** Options that are not settings. */
    private static final Set<String> NOT_SETTINGS = Set.of("--config", "--print-config", "--help", "--version");

    /**
     * One non-default value per option: the command-line arguments and the YAML that must give the same
     * configuration.
     */
    private static final Map<String, Sample> SAMPLES = samples();

    @TempDir
    Path tmp;

    record Sample(List<String> args, String yaml) {
    }

    private static Map<String, Sample> samples() {
        final Map<String, Sample> s = new LinkedHashMap<>();
        s.put("--dir", new Sample(List.of("--dir", "/tmp/kvidx-sample"), "dir: /tmp/kvidx-sample"));
        s.put("--cell", new Sample(List.of("--cell", "sample"), "cell: sample"));
        final String group = SharedFiles.forGroup(null).group().getName();
        s.put("--group", new Sample(List.of("--group", group), "group: " + group));
        s.put("--block-size", new Sample(List.of("--block-size", "32"), "blockSize: 32"));
        s.put("--capacity-blocks", new Sample(List.of("--capacity", "4096"), "capacityBlocks: 4096"));
        s.put("--shards", new Sample(List.of("--shards", "16"), "shards: 16"));
        s.put("--max-pods", new Sample(List.of("--max-pods", "64"), "maxPods: 64"));
        s.put("--max-chain-length", new Sample(List.of("--max-chain-length", "1024"), "maxChainLength: 1024"));
        s.put("--mlock-index", new Sample(List.of("--mlock-index"), "mlockIndex: true"));
        s.put("--writers", new Sample(List.of("--writers", "2"), "writers: 2"));
        s.put("--writer-queue-length", new Sample(List.of("--writer-queue-length", "65536"),
            "writerQueueLength: 65536"));
        s.put("--pod-timeout-ms", new Sample(List.of("--pod-timeout-ms", "1000"), "podTimeoutMs: 1000"));
        s.put("--heartbeat-interval-ms", new Sample(List.of("--heartbeat-interval-ms", "100"),
            "heartbeatIntervalMs: 100"));
        s.put("--replay-timeout-ms", new Sample(List.of("--replay-timeout-ms", "500"), "replayTimeoutMs: 500"));
        s.put("--zmq-handshake-timeout-ms", new Sample(List.of("--zmq-handshake-timeout-ms", "250"),
            "zmqHandshakeTimeoutMs: 250"));
        s.put("--zmq-io-threads", new Sample(List.of("--zmq-io-threads", "4"), "zmqIoThreads: 4"));
        s.put("--zmq-ingest-threads", new Sample(List.of("--zmq-ingest-threads", "2"), "zmqIngestThreads: 2"));
        s.put("--replay-gap-policy", new Sample(List.of("--replay-gap-policy", "keep"), "replayGapPolicy: keep"));
        s.put("--checkpoint-interval-ms", new Sample(List.of("--checkpoint-ms", "50"), "checkpointIntervalMs: 50"));
        s.put("--pod-max-blocks", new Sample(List.of("--pod-max-blocks", "4096"), "podMaxBlocks: 4096"));
        s.put("--stats-interval-ms", new Sample(List.of("--stats-ms", "1000"), "statsIntervalMs: 1000"));
        s.put("--idle-strategy", new Sample(List.of("--idle", "yield"), "idleStrategy: yield"));
        s.put("--zmq-ingest-cpu", new Sample(List.of("--zmq-ingest-cpu", "1"), "zmqIngestCpu: 1"));
        s.put("--zmq-ingest-idle", new Sample(List.of("--zmq-ingest-idle", "busy-spin"), "zmqIngestIdle: busy-spin"));
        s.put("--zmq-replay-cpu", new Sample(List.of("--zmq-replay-cpu", "1"), "zmqReplayCpu: 1"));
        s.put("--zmq-replay-idle", new Sample(List.of("--zmq-replay-idle", "sleep-2ms"), "zmqReplayIdle: sleep-2ms"));
        s.put("--zmq-io-cpus", new Sample(List.of("--zmq-io-cpus", "0,1"), "zmqIoCpus: [0, 1]"));
        s.put("--aeron-ingest-cpu", new Sample(List.of("--aeron-ingest-cpu", "0"), "aeronIngestCpu: 0"));
        s.put("--aeron-ingest-idle", new Sample(List.of("--aeron-ingest-idle", "sleep-5ms"),
            "aeronIngestIdle: sleep-5ms"));
        s.put("--writer-cpus", new Sample(List.of("--writer-cpus", "1"), "writerCpus: [1]"));
        s.put("--writer-idle", new Sample(List.of("--writer-idle", "backoff-50us"), "writerIdle: backoff-50us"));
        s.put("--maintenance-cpu", new Sample(List.of("--maintenance-cpu", "0"), "maintenanceCpu: 0"));
        s.put("--maintenance-idle", new Sample(List.of("--maintenance-idle", "sleep-10ms"),
            "maintenanceIdle: sleep-10ms"));
        s.put("--zmq", new Sample(List.of("--zmq", "pod-a@org/m=tcp://h:5557", "--zmq", "*=tcp://h:6557"), String.join(
            "\n", "zmq:", "  - {endpoint: 'tcp://h:5557', pod: pod-a, model: org/m}", "  - endpoint: tcp://h:6557")));
        s.put("--replay", new Sample(List.of("--zmq", "pod-a=tcp://h:5557", "--replay", "pod-a=tcp://h:5558"),
            "zmq: [{endpoint: 'tcp://h:5557', pod: pod-a, replay: 'tcp://h:5558'}]"));
        s.put("--engine", new Sample(List.of("--zmq", "pod-s=tcp://h:7557", "--engine", "pod-s=sglang"),
            "zmq: [{endpoint: 'tcp://h:7557', pod: pod-s, engine: sglang}]"));
        s.put("--metrics", new Sample(List.of("--metrics", "127.0.0.1:9464"), "metrics: '127.0.0.1:9464'"));
        s.put("--metrics-allow-remote", new Sample(List.of("--metrics-allow-remote"), "metricsAllowRemote: true"));
        s.put("--zmq-topic-pod", new Sample(List.of("--zmq-topic-pod", "pod-*", "--zmq-topic-pod", "10.0.0.?:8000"),
            "zmqTopicPods: ['pod-*', '10.0.0.?:8000']"));
        s.put("--aeron-allow-remote", new Sample(List.of("--aeron-allow-remote"), "aeron: {allowRemote: true}"));
        s.put("--aeron-pod", new Sample(List.of("--aeron-pod", "pod-a"), "aeron: {pods: [pod-a]}"));
        s.put("--http", new Sample(List.of("--http", "127.0.0.1:8090"), "http: '127.0.0.1:8090'"));
        s.put("--zmq-bind", new Sample(List.of("--zmq-bind", "tcp://*:5557"), "zmqBind: 'tcp://*:5557'"));
        s.put("--key-scheme", new Sample(List.of("--key-scheme", "xxh3-chain"), "keyScheme: xxh3-chain"));
        s.put("--http-idle", new Sample(List.of("--http-idle", "busy-spin"), "httpIdle: busy-spin"));
        s.put("--http-threads", new Sample(List.of("--http-threads", "4"), "httpThreads: 4"));
        s.put("--http-max-body-bytes", new Sample(List.of("--http-max-body-bytes", "65536"),
            "httpMaxBodyBytes: 65536"));
        s.put("--http-token-file", new Sample(List.of("--http-token-file", "/run/secrets/kvidx-token"),
            "httpTokenFile: /run/secrets/kvidx-token"));
        s.put("--http-admin-token-file", new Sample(List.of("--http-token-file", "/run/t", "--http-admin-token-file",
            "/run/a"), "httpTokenFile: /run/t\nhttpAdminTokenFile: /run/a"));
        s.put("--http-tls-cert-file", new Sample(List.of("--http-tls-cert-file", "/run/tls.crt",
            "--http-tls-key-file", "/run/tls.key"), "httpTlsCertFile: /run/tls.crt\nhttpTlsKeyFile: /run/tls.key"));
        s.put("--http-tls-key-file", new Sample(List.of("--http-tls-cert-file", "/run/tls.crt",
            "--http-tls-key-file", "/run/tls.key"), "httpTlsCertFile: /run/tls.crt\nhttpTlsKeyFile: /run/tls.key"));
        s.put("--http-tls-client-ca-file", new Sample(List.of("--http-tls-cert-file", "/run/tls.crt",
            "--http-tls-key-file", "/run/tls.key", "--http-tls-client-ca-file", "/run/ca.crt"),
            "httpTlsCertFile: /run/tls.crt\nhttpTlsKeyFile: /run/tls.key\nhttpTlsClientCaFile: /run/ca.crt"));
        s.put("--http-allow-remote", new Sample(List.of("--http-allow-remote"), "httpAllowRemote: true"));
        s.put("--http-max-connections", new Sample(List.of("--http-max-connections", "64"),
            "httpMaxConnections: 64"));
        s.put("--http-request-read-ms", new Sample(List.of("--http-request-read-ms", "2000"),
            "httpRequestReadMs: 2000"));
        s.put("--http-max-registrations", new Sample(List.of("--http-max-registrations", "8"),
            "httpMaxRegistrations: 8"));
        s.put("--http-register-host", new Sample(List.of("--http-register-host", "10.0.0.0/8",
            "--http-register-host", "*.vllm"), "httpRegisterHosts: [10.0.0.0/8, '*.vllm']"));
        s.put("--http-dump-min-interval-ms", new Sample(List.of("--http-dump-min-interval-ms", "0"),
            "httpDumpMinIntervalMs: 0"));
        s.put("--peer", new Sample(List.of("--peer", "http://10.0.0.5:8080"), "peer: 'http://10.0.0.5:8080'"));
        s.put("--peer-optional", new Sample(List.of("--peer-optional"), "peerOptional: true"));
        s.put("--peer-timeout-ms", new Sample(List.of("--peer-timeout-ms", "5000"), "peerTimeoutMs: 5000"));
        s.put("--snapshot-max-bytes", new Sample(List.of("--snapshot-max-bytes", "1048576"),
            "snapshotMaxBytes: 1048576"));
        s.put("--tier-map-blocks", new Sample(List.of("--tier-map-blocks", "4096"), "tierMapBlocks: 4096"));
        s.put("--aeron", new Sample(List.of("--aeron", "aeron:ipc"), "aeron: {channels: ['aeron:ipc']}"));
        s.put("--discover", new Sample(List.of("--discover", "app=vllm"), "discovery: {selector: app=vllm}"));
        s.put("--discover-pool", new Sample(List.of("--discover-pool", "llama"), "discovery: {pool: llama}"));
        s.put("--discover-namespace", new Sample(List.of("--discover", "a=b", "--discover-namespace", "fleet"),
            "discovery: {selector: a=b, namespace: fleet}"));
        s.put("--discover-kv-port", new Sample(List.of("--discover", "a=b", "--discover-kv-port", "6000"),
            "discovery: {selector: a=b, kvEventsPort: 6000}"));
        s.put("--discover-replay-port", new Sample(List.of("--discover", "a=b", "--discover-replay-port", "6001"),
            "discovery: {selector: a=b, kvReplayPort: 6001}"));
        s.put("--discover-engine", new Sample(List.of("--discover", "a=b", "--discover-engine", "sglang"),
            "discovery: {selector: a=b, engine: sglang}"));
        s.put("--discover-model", new Sample(List.of("--discover", "a=b", "--discover-model", "qwen"),
            "discovery: {selector: a=b, model: qwen}"));
        s.put("--discover-model-label", new Sample(List.of("--discover", "a=b", "--discover-model-label", "m"),
            "discovery: {selector: a=b, modelLabel: m}"));
        s.put("--discover-resync-ms", new Sample(List.of("--discover", "a=b", "--discover-resync-ms", "0"),
            "discovery: {selector: a=b, resyncMs: 0}"));
        s.put("--kubeconfig", new Sample(List.of("--discover", "a=b", "--kubeconfig", "pom.xml"),
            "discovery: {selector: a=b, kubeconfig: pom.xml}"));
        s.put("--jetstream", new Sample(List.of("--jetstream", "nats://10.0.0.9:4222,tls://10.0.0.8:4222"),
            "jetstream: {url: 'nats://10.0.0.9:4222,tls://10.0.0.8:4222'}"));
        s.put("--jetstream-role", new Sample(List.of("--jetstream-role", "relay"), "jetstream: {role: relay}"));
        s.put("--jetstream-stream", new Sample(List.of("--jetstream-stream", "EVENTS_A"),
            "jetstream: {stream: EVENTS_A}"));
        s.put("--jetstream-subject-prefix", new Sample(List.of("--jetstream-subject-prefix", "fleet-a.kv"),
            "jetstream: {subjectPrefix: fleet-a.kv}"));
        s.put("--jetstream-bucket", new Sample(List.of("--jetstream-bucket", "SNAPS_A"),
            "jetstream: {bucket: SNAPS_A}"));
        s.put("--jetstream-max-age-ms", new Sample(List.of("--jetstream-max-age-ms", "600000"),
            "jetstream: {maxAgeMs: 600000}"));
        s.put("--jetstream-max-bytes", new Sample(List.of("--jetstream-max-bytes", "2097152"),
            "jetstream: {maxBytes: 2097152}"));
        s.put("--jetstream-duplicate-window-ms", new Sample(List.of("--jetstream-duplicate-window-ms", "60000"),
            "jetstream: {duplicateWindowMs: 60000}"));
        s.put("--jetstream-snapshot-interval-ms", new Sample(List.of("--jetstream-snapshot-interval-ms", "0"),
            "jetstream: {snapshotIntervalMs: 0}"));
        s.put("--jetstream-snapshot-events", new Sample(List.of("--jetstream-snapshot-events", "5000"),
            "jetstream: {snapshotEvents: 5000}"));
        s.put("--jetstream-exit-on-loss", new Sample(List.of("--no-jetstream-exit-on-loss"),
            "jetstream: {exitOnLoss: false}"));
        s.put("--jetstream-lease-ttl-ms", new Sample(List.of("--jetstream-lease-ttl-ms", "0"),
            "jetstream: {leaseTtlMs: 0}"));
        s.put("--jetstream-lease-bucket", new Sample(List.of("--jetstream-lease-bucket", "LEASES_A"),
            "jetstream: {leaseBucket: LEASES_A}"));
        s.put("--jetstream-user", new Sample(List.of("--jetstream-user", "kvidx", "--jetstream-password-file",
            "/run/p"), "jetstream: {user: kvidx, passwordFile: /run/p}"));
        s.put("--jetstream-password-file", new Sample(List.of("--jetstream-user", "kvidx",
            "--jetstream-password-file", "/run/p"), "jetstream: {user: kvidx, passwordFile: /run/p}"));
        s.put("--jetstream-token-file", new Sample(List.of("--jetstream-token-file", "/run/t"),
            "jetstream: {tokenFile: /run/t}"));
        s.put("--jetstream-creds-file", new Sample(List.of("--jetstream-creds-file", "/run/kvidx.creds"),
            "jetstream: {credsFile: /run/kvidx.creds}"));
        s.put("--jetstream-nkey-file", new Sample(List.of("--jetstream-nkey-file", "/run/kvidx.nk"),
            "jetstream: {nkeyFile: /run/kvidx.nk}"));
        s.put("--jetstream-tls-ca-file", new Sample(List.of("--jetstream", "tls://10.0.0.9:4222",
            "--jetstream-tls-ca-file", "/run/ca.pem"),
            "jetstream: {url: 'tls://10.0.0.9:4222', tlsCaFile: /run/ca.pem}"));
        s.put("--jetstream-tls-cert-file", new Sample(List.of("--jetstream", "tls://10.0.0.9:4222",
            "--jetstream-tls-cert-file", "/run/c.pem", "--jetstream-tls-key-file", "/run/k.pem"),
            "jetstream: {url: 'tls://10.0.0.9:4222', tlsCertFile: /run/c.pem, tlsKeyFile: /run/k.pem}"));
        s.put("--jetstream-tls-key-file", new Sample(List.of("--jetstream", "tls://10.0.0.9:4222",
            "--jetstream-tls-cert-file", "/run/c.pem", "--jetstream-tls-key-file", "/run/k.pem"),
            "jetstream: {url: 'tls://10.0.0.9:4222', tlsCertFile: /run/c.pem, tlsKeyFile: /run/k.pem}"));
        s.put("--aeron-stream-id", new Sample(List.of("--aeron-stream-id", "9"), "aeron: {streamId: 9}"));
        s.put("--aeron-dir", new Sample(List.of("--aeron-dir", "/tmp/a"), "aeron: {dir: /tmp/a}"));
        s.put("--embedded-driver", new Sample(List.of("--no-embedded-driver"), "aeron: {embeddedDriver: false}"));
        s.put("--aeron-term-length", new Sample(List.of("--aeron-term-length", "131072"),
            "aeron: {termLength: 131072}"));
        return s;
    }

    private static Set<String> declaredOptions() {
        final Set<String> options = new TreeSet<>();
        for (final OptionSpec o : new CommandLine(new DaemonCommand()).getCommandSpec().options()) {
            if (!NOT_SETTINGS.contains(o.longestName())) {
                options.add(o.names()[0]);
            }
        }
        return options;
    }

    private CliRun printConfig(final List<String> args, final String yaml) throws IOException {
        final List<String> all = new ArrayList<>(List.of("daemon", "--print-config"));
        if (yaml != null) {
            final Path file = Files.createTempFile(tmp, "daemon", ".yaml");
            Files.writeString(file, yaml + "\n");
            all.add("--config");
            all.add(file.toString());
        }
        all.addAll(args);
        return CliRun.of(all.toArray(new String[0]));
    }

    private static Set<String> flatKeys(final String prefix, final Map<?, ?> map) {
        final Set<String> keys = new TreeSet<>();
        for (final Map.Entry<?, ?> e : map.entrySet()) {
            final String key = prefix + e.getKey();
            if (e.getValue() instanceof Map<?, ?> nested) {
                keys.addAll(flatKeys(key + ".", nested));
            } else if (e.getValue() instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof Map<?, ?>) {
                for (final Object entry : list) {
                    keys.addAll(flatKeys(key + ".", (Map<?, ?>) entry));
                }
            } else {
                keys.add(key);
            }
        }
        return keys;
    }

    @Test
    void shouldHaveAnOptionForEveryKeyAndAKeyForEveryOption() throws IOException {
        // Options picocli declares vs the options of the YAML reader's keys.
        assertEquals(declaredOptions(), new TreeSet<>(DaemonSettings.optionsByKey().values()),
            "options without a YAML key, or YAML keys whose option does not exist");
        // Keys the YAML reader accepts vs keys --print-config prints (a ZeroMQ entry with every field set).
        final CliRun printed = printConfig(List.of("--zmq", "pod-a@m=tcp://h:1", "--replay", "pod-a=tcp://h:2",
            "--engine", "pod-a=sglang"), null);
        assertEquals(0, printed.code(), printed.err());
        final Map<?, ?> yaml = (Map<?, ?>) new Load(LoadSettings.builder().build()).loadFromString(printed.out());
        assertEquals(new TreeSet<>(DaemonSettings.optionsByKey().keySet()), flatKeys("", yaml),
            "printed keys vs keys the reader accepts");
        for (final String key : DaemonSettings.optionsByKey().keySet()) {
            final int depth = key.length() - key.replace(".", "").length();
            final CliRun r = printConfig(List.of(), key.replace(".", ": {") + ": [1, [2]]" + "}".repeat(depth));
            assertFalse(r.err().contains("unknown key"), key + " is read: " + r.err());
        }
    }

    @Test
    void shouldSetTheSameThroughAnOptionAsThroughItsKey() throws IOException {
        assertEquals(declaredOptions(), new TreeSet<>(SAMPLES.keySet()), "a sample for every option");
        final CliRun defaults = printConfig(List.of(), null);
        assertEquals(0, defaults.code(), defaults.err());
        for (final Map.Entry<String, Sample> e : SAMPLES.entrySet()) {
            final CliRun cli = printConfig(e.getValue().args(), null);
            final CliRun yaml = printConfig(List.of(), e.getValue().yaml());
            assertEquals(0, cli.code(), e.getKey() + ": " + cli.err());
            assertEquals(0, yaml.code(), e.getKey() + ": " + yaml.err());
            assertNotEquals(defaults.out(), cli.out(), e.getKey() + " changes the configuration");
            assertEquals(yaml.out(), cli.out(), e.getKey() + " sets what its YAML key sets");
        }
    }

    @Test
    void shouldReadThePrintedConfigurationBackToTheSameConfiguration() throws IOException {
        final List<String> args = new ArrayList<>();
        SAMPLES.forEach((option, sample) -> {
            if (!option.equals("--replay") && !option.equals("--writers") && !option.equals("--engine")
                && !option.startsWith("--discover") && !option.equals("--kubeconfig")
                && !option.equals("--http-admin-token-file") && !option.equals("--http-tls-key-file")
                && !option.equals("--http-tls-client-ca-file") && !option.equals("--jetstream-user")
                && !option.equals("--jetstream-password-file") && !option.equals("--jetstream-token-file")
                && !option.equals("--jetstream-nkey-file") && !option.equals("--jetstream-tls-ca-file")
                && !option.equals("--jetstream-tls-cert-file") && !option.equals("--jetstream-tls-key-file")) {
                args.addAll(sample.args());
            }
        });
        // NATS credentials are of one kind at most: the credentials file's sample stands for them.
        args.addAll(List.of("--writers", "1", "--replay", "pod-a=tcp://h:5558"));
        // The admin token's sample repeats --http-token-file (it needs one): here that option came from its own sample.
        args.addAll(List.of("--http-admin-token-file", "/run/a"));
        // The TLS key's and client CA's samples repeat the certificate's options: here only the CA is added.
        args.addAll(List.of("--http-tls-client-ca-file", "/run/ca.crt"));
        // Discovery's options once each (a selector and a pool are exclusive).
        args.addAll(List.of("--discover", "app=vllm,tier=gpu", "--discover-namespace", "fleet", "--discover-kv-port",
            "6000", "--discover-replay-port", "6001", "--discover-engine", "sglang", "--discover-model", "qwen",
            "--discover-model-label", "m", "--discover-resync-ms", "0", "--kubeconfig", "pom.xml"));
        final CliRun first = printConfig(args, null);
        assertEquals(0, first.code(), first.err());
        final CliRun second = printConfig(List.of(), first.out());
        assertEquals(0, second.code(), second.err());
        assertEquals(first.out(), second.out());
        assertTrue(first.out().contains("writerCpus:\n  - 1\n"), first.out());
        // The same through the API: the file read into a context prints the same.
        final DaemonContext context = DaemonConfigFile.parse(first.out(), new DaemonContext(), "printed").conclude();
        assertEquals(first.out(), DaemonConfigFile.print(context));
    }

    @Test
    void shouldDocumentTheDefaultsItPrints() throws IOException {
        final String doc = Files.readString(Path.of("..", "docs", "configuration.md"));
        final String marker = "<!-- print-config -->\n```yaml\n";
        final int start = doc.indexOf(marker);
        assertTrue(start >= 0, "docs/configuration.md has the defaults block");
        final String documented = doc.substring(start + marker.length(), doc.indexOf("```", start + marker.length()));
        final CliRun defaults = printConfig(List.of(), null);
        assertEquals(0, defaults.code(), defaults.err());
        assertEquals(defaults.out(), documented, "docs/configuration.md shows what --print-config prints");
    }

    @Test
    void shouldLetOptionsWinOverTheFile() throws IOException {
        final CliRun r = printConfig(List.of("--writers", "3", "--writer-idle", "busy"),
            "writers: 99\nwriterIdle: nap\nblockSize: 64\nidleStrategy: yield");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("\nwriters: 3\n"), r.out());
        assertTrue(r.out().contains("\nwriterIdle: busy-spin\n"), "canonical name printed: " + r.out());
        assertTrue(r.out().contains("\nblockSize: 64\n"), r.out());
        assertTrue(r.out().contains("\nzmqIngestIdle: yield\n"), "idleStrategy for agents without one: " + r.out());
        assertTrue(r.out().contains("\nmaintenanceIdle: sleep-1ms\n"), r.out());
    }

    @Test
    void shouldFailWithOneLineNamingTheKeyOrOptionAndTheRange() throws IOException {
        final String[][] cases = {
            // YAML value, options, expected message (after "kvidx: " and the file name for YAML)
            {"writers: abc", "", "writers must be an integer in [-2147483648, 2147483647]: abc"},
            {"writers: 99", "", "writers must be in [1, 64]: 99"},
            {"writerz: 1", "", "unknown key 'writerz' (known: dir, cell, "},
            {"replayGapPolicy: maybe", "", "replayGapPolicy must be one of clear or keep: maybe"},
            {"writerIdle: nap", "", "writerIdle must be one of busy-spin, yield, backoff, backoff-<N>us with N in "
                + "[1, 1000] or sleep-<N>ms with N in [1, 1000]: nap"},
            {"maintenanceIdle: sleep-0ms", "", "maintenanceIdle must be one of busy-spin"},
            {"zmqIngestCpu: -3", "", "zmqIngestCpu must be none or a CPU number in [0, 8191]: -3"},
            {"zmqIngestCpu: one", "", "zmqIngestCpu must be none or a CPU number in [0, 8191]: one"},
            {"writerCpus: [1, 2]", "", "writerCpus must name one CPU per writer (1) or be none: [1, 2]"},
            {"writerCpus: [a]", "", "writerCpus must be none or a list of CPU numbers in [0, 8191]: [a]"},
            {"writerCpus: [9000]", "", "writerCpus must be none or a list of CPU numbers in [0, 8191]: [9000]"},
            {"zmqIoCpus: [0, 9000]", "", "zmqIoCpus must be none or a list of CPU numbers in [0, 8191]: [0, 9000]"},
            {"shards: 3", "", "shards must be a power of two in [2, 65536]: 3"},
            {"capacityBlocks: 0", "", "capacityBlocks must be in [1, "},
            {"maxChainLength: 0", "", "maxChainLength must be in [1, 1048576]: 0"},
            {"aeron: {termLength: 1000}", "", "aeron.termLength must be a power of two in [65536, 1073741824]: 1000"},
            {"aeron: 5", "", "aeron must be a mapping: 5"},
            {"aeron: {channels: aeron:ipc}", "", "aeron.channels must be a list: aeron:ipc"},
            {"mlockIndex: yes", "", "mlockIndex must be true or false: yes"},
            {"zmq: [{pod: a}]", "", "zmq.endpoint must be set in each 'zmq' entry"},
            {"zmq: [{endpoint: x, engine: y}]", "", "zmq.engine must be vllm or sglang: y"},
            {"zmq: [{endpoint: x, replai: y}]", "", "unknown zmq key 'replai'"},
            {"metrics: nohost", "", "metrics must be HOST:PORT with a port in [0, 65535]: nohost"},
            {"", "--metrics h:99999", "--metrics must be HOST:PORT with a port in [0, 65535]: h:99999"},
            {"", "--metrics 0.0.0.0:9464", "--metrics must be on a loopback address (127.0.0.1:PORT, [::1]:PORT, "
                + "localhost:PORT) unless metricsAllowRemote (--metrics-allow-remote) is set"},
            {"aeron: {channels: ['aeron:udp?endpoint=0.0.0.0:40123']}", "", "aeron.channels must be aeron:ipc or UDP "
                + "on a loopback address (aeron:udp?endpoint=127.0.0.1:PORT) unless aeron.allowRemote"},
            {"", "--aeron aeron:udp?endpoint=10.0.0.7:40123", "--aeron must be aeron:ipc or UDP on a loopback "
                + "address"},
            {"", "--engine p=sglang", "--engine p=...: no --zmq endpoint for pod or at address p"},
            {"jetstream: {url: 'http://x:1'}", "", "jetstream.url must be nats://HOST:PORT or tls://HOST:PORT"},
            {"", "--jetstream nats://nohost", "--jetstream must be nats://HOST:PORT or tls://HOST:PORT"},
            {"jetstream: {role: leader}", "", "jetstream.role must be one of consumer or relay: leader"},
            {"jetstream: {stream: a.b}", "", "jetstream.stream must be 1 to 64 of A-Z a-z 0-9 _ -: a.b"},
            {"jetstream: {subjectPrefix: 'a..b'}", "", "jetstream.subjectPrefix must be dot-separated tokens"},
            {"jetstream: {subjectPrefix: 'kvidx.*'}", "", "jetstream.subjectPrefix must hold only A-Z a-z 0-9 - _"},
            {"jetstream: {duplicateWindowMs: 7200000}", "", "jetstream.duplicateWindowMs must be in [1000, 3600000]"},
            {"", "--jetstream-user u", "--jetstream-user needs jetstream.passwordFile"},
            {"", "--jetstream-token-file t --jetstream-creds-file c", "--jetstream-token-file one of"},
            {"", "--jetstream nats://h:4222 --jetstream-tls-ca-file ca.pem", "--jetstream-tls-ca-file needs tls:// "
                + "URLs in jetstream.url: nats://h:4222"},
            {"", "--jetstream tls://h:4222 --jetstream-tls-cert-file c.pem", "--jetstream-tls-cert-file needs "
                + "jetstream.tlsKeyFile"},
            {"", "--jetstream nats://h:4222 --jetstream-tls-cert-file c.pem --jetstream-tls-key-file k.pem",
                "--jetstream-tls-cert-file needs tls:// URLs in jetstream.url: nats://h:4222"},
            {"writers: [", "", "not valid YAML: "},
            {"cell: a/b", "", "cell must be a plain non-empty name: a/b"},
            {"group: no-such-group-kvidx", "", "group must name an existing group: unknown group"},
            {"", "--writers 99", "--writers must be in [1, 64]: 99"},
            {"", "--capacity 0", "--capacity-blocks must be in [1, "},
            {"", "--writer-idle nap", "--writer-idle must be one of busy-spin"},
            {"", "--zmq-ingest-cpu x", "--zmq-ingest-cpu must be none or a CPU number in [0, 8191]: x"},
            {"", "--zmq-ingest-cpu 9000", "--zmq-ingest-cpu must be none or a CPU number in [0, 8191]: 9000"},
            {"", "--writers 2 --writer-cpus 1", "--writer-cpus must name one CPU per writer (2) or be none: [1]"},
            {"", "--writer-cpus 1,x", "--writer-cpus must be none or a list of CPU numbers in [0, 8191]: x"},
            {"", "--zmq-io-cpus 1,x", "--zmq-io-cpus must be none or a list of CPU numbers in [0, 8191]: x"},
            {"", "--aeron-term-length 3", "--aeron-term-length must be a power of two in [65536, 1073741824]: 3"},
            {"", "--writers abc", "Invalid value for option '--writers': 'abc' is not an int"},
            {"", "--no-such-option", "Unknown option: '--no-such-option'"},
            // The file's bad value is named by its key even when other options are given.
            {"writers: 0", "--block-size 32", "writers must be in [1, 64]: 0"},
            // ... and the option's bad value by the option even when a file is given.
            {"blockSize: 32", "--writers 99", "--writers must be in [1, 64]: 99"},
        };
        for (final String[] c : cases) {
            final List<String> args = c[1].isEmpty() ? List.of() : Arrays.asList(c[1].split(" "));
            final CliRun r = printConfig(args, c[0].isEmpty() ? null : c[0]);
            final String context = c[0] + " " + c[1] + " -> " + r.err();
            assertEquals(2, r.code(), context);
            assertEquals("", r.out(), context);
            final List<String> lines = r.err().lines().toList();
            assertEquals(1, lines.size(), "one line: " + context);
            final boolean fromFile = !c[2].startsWith("-") && !c[2].startsWith("Invalid")
                && !c[2].startsWith("Unknown");
            assertTrue(lines.get(0).startsWith("kvidx: " + (fromFile ? tmp.toString() : c[2])), context);
            assertTrue(lines.get(0).contains(fromFile ? ".yaml: " + c[2] : c[2]), context);
        }
    }
}
