package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.serve.TestCertificates;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Credentials and TLS against a real nats-server: a relay and a consumer with a token file, then over TLS with a CA
 * file of their own (certificates made by openssl for the test), each ending exact on the Python publisher's stream;
 * a daemon without the token, or trusting only the JVM's store, refuses to start with a message naming NATS. Mutual
 * TLS: a server that verifies clients ({@code tls { verify: true }}) admits a relay and a consumer presenting a
 * certificate its CA signed, and refuses a daemon presenting none or a self-signed one.
 */
@Timeout(180)
class JetStreamCredentialsTest {
    private static final String PODS = "pod-a,pod-b";
    private static final String TOKEN = "kvidx-test-token-0123456789";

    @TempDir
    Path dir;

    private void roundTrip(final NatsServer nats, final String url, final Consumer<DaemonContext> credentials)
        throws Exception {
        try (PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL)) {
            final DaemonContext relayContext = StreamFleet.relay(dir, "relay", peer, url);
            credentials.accept(relayContext);
            final DaemonContext consumerContext = StreamFleet.consumer(dir, "consumer", url);
            credentials.accept(consumerContext);
            try (KvidxDaemon relay = KvidxDaemon.start(relayContext);
                KvidxDaemon consumer = KvidxDaemon.start(consumerContext)) {
                StreamFleet.awaitSubscribed(peer, relay);
                final Path docs = dir.resolve("docs.txt");
                peer.command("stream 51 300 600 " + PODS + " " + StreamFleet.MODEL + " " + docs + " "
                    + dir.resolve("log.txt"));
                peer.command("stream-wait 60");
                JetStreamConsumerTest.agree(relay, consumer, StreamFleet.documents(docs));
            }
        }
    }

    @Test
    void shouldConnectWithATokenFileAndRefuseWithout() throws Exception {
        PyPeer.requirePython();
        final Path token = Files.writeString(dir.resolve("nats-token"), TOKEN + "\n");
        try (NatsServer nats = NatsServer.start(dir, "--auth", TOKEN)) {
            roundTrip(nats, nats.url(), c -> c.jetstream().tokenFile(token.toString()));
            final IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> KvidxDaemon.start(StreamFleet.consumer(dir, "anonymous", nats.url())).close());
            assertTrue(refused.getMessage().startsWith("cannot connect to NATS at " + nats.url()),
                refused.getMessage());
        }
    }

    @Test
    void shouldConnectOverTlsTrustingItsCaFileOnly() throws Exception {
        PyPeer.requirePython();
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/openssl")) || System.getenv("CI") != null,
            "skipped locally: openssl makes the test certificates");
        final Path tls = Files.createDirectories(dir.resolve("tls"));
        Files.writeString(tls.resolve("ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
        openssl(tls, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days",
            "1", "-subj", "/CN=kvidx-test-ca");
        openssl(tls, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj",
            "/CN=127.0.0.1");
        openssl(tls, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "1", "-extfile", "ext.cnf");
        try (NatsServer nats = NatsServer.start(dir, "--tls", "--tlscert", tls.resolve("server.pem").toString(),
            "--tlskey", tls.resolve("server.key").toString())) {
            final String url = "tls://127.0.0.1:" + nats.port();
            roundTrip(nats, url, c -> c.jetstream().tlsCaFile(tls.resolve("ca.pem").toString()));
            final IllegalStateException untrusted = assertThrows(IllegalStateException.class,
                () -> KvidxDaemon.start(StreamFleet.consumer(dir, "untrusting", url)).close());
            assertTrue(untrusted.getMessage().startsWith("cannot connect to NATS at " + url), untrusted.getMessage());
        }
    }

    @Test
    void shouldConnectWithAClientCertificateAndBeRefusedWithoutOne() throws Exception {
        PyPeer.requirePython();
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/openssl")) || System.getenv("CI") != null,
            "skipped locally: openssl makes the test certificates");
        final TestCertificates certs = TestCertificates.make(Files.createDirectories(dir.resolve("mtls")));
        // The server verifies clients: a certificate its CA signed, or no connection.
        final Path conf = Files.writeString(dir.resolve("nats-mtls.conf"), "tls {\n  cert_file: \""
            + certs.serverCert() + "\"\n  key_file: \"" + certs.serverKey() + "\"\n  ca_file: \"" + certs.ca()
            + "\"\n  verify: true\n}\n");
        try (NatsServer nats = NatsServer.start(dir, "-c", conf.toString())) {
            final String url = "tls://127.0.0.1:" + nats.port();
            roundTrip(nats, url, c -> c.jetstream().tlsCaFile(certs.ca().toString())
                .tlsCertFile(certs.clientCert().toString()).tlsKeyFile(certs.clientKey().toString()));
            final DaemonContext without = StreamFleet.consumer(dir, "no-certificate", url);
            without.jetstream().tlsCaFile(certs.ca().toString());
            final IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> KvidxDaemon.start(without).close());
            assertTrue(refused.getMessage().startsWith("cannot connect to NATS at " + url), refused.getMessage());
            final DaemonContext stranger = StreamFleet.consumer(dir, "stranger", url);
            stranger.jetstream().tlsCaFile(certs.ca().toString()).tlsCertFile(certs.strangerCert().toString())
                .tlsKeyFile(certs.strangerKey().toString());
            final IllegalStateException unsigned = assertThrows(IllegalStateException.class,
                () -> KvidxDaemon.start(stranger).close());
            assertTrue(unsigned.getMessage().startsWith("cannot connect to NATS at " + url), unsigned.getMessage());
        }
    }

    private static void openssl(final Path dir, final String... args) throws Exception {
        final List<String> command = new java.util.ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        final Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
            .redirectOutput(dir.resolve("openssl.log").toFile()).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "openssl finished");
        assertEquals(0, p.exitValue(), () -> "openssl " + String.join(" ", args) + ": "
            + io.kvidx.daemon.lifecycle.ChildProcesses.read(dir.resolve("openssl.log")));
    }
}
