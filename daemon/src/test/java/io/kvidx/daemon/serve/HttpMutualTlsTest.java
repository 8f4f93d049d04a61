package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestHeartbeat;
import io.kvidx.serve.ServerTls;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The HTTP API over mutual TLS (issue 35, item 2): certificates made by {@code openssl} (a CA, the server's, a client's
 * signed by the CA and a stranger's self-signed one), the real server, the real {@code curl}. A client with the CA's
 * certificate is answered; a client without a certificate, with a stranger's, or speaking plain HTTP gets no answer.
 */
@Timeout(60)
class HttpMutualTlsTest {
    @TempDir
    Path dir;

    @Test
    void shouldAnswerOnlyClientsWithACertificateTheCaSigned() throws Exception {
        final Path ca = dir.resolve("ca.crt");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir.resolve("ca.key").toString(), "-out",
            ca.toString(), "-days", "1", "-subj", "/CN=kvidx-test-ca");
        final Path[] server = signed("server", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1");
        final Path[] client = signed("client", "/CN=router", null);
        final Path strangerKey = dir.resolve("stranger.key");
        final Path strangerCert = dir.resolve("stranger.crt");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", strangerKey.toString(), "-out",
            strangerCert.toString(), "-days", "1", "-subj", "/CN=stranger");

        final ServerTls tls = ServerTls.of(server[0], server[1], ca, "--http-tls");
        assertTrue(tls.mutual());
        try (io.kvidx.daemon.membership.Membership membership = TestFleet.instantMembership();
             IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("t").shardCount(4)
                .capacityBlocks(1024).maxPods(4).deleteOnClose(true));
             TestHeartbeat _ = new TestHeartbeat(writer);
             IndexHttpServer http = IndexHttpServer.start(new InetSocketAddress("127.0.0.1", 0), 1, false, 1 << 20,
                 new IndexHttpServer.Guards(16, 10_000, null, null, tls),
                 IndexReader.attach(new IndexReaderContext().dir(dir).cell("t").attachTimeoutMs(1_000)), null, null,
                 TestFleet.of(membership, 10_000))) {
            final String url = "https://localhost:" + http.port();
            final Curl ok = curl("--cacert", ca.toString(), "--cert", client[0].toString(), "--key",
                client[1].toString(), url + "/workers");
            assertEquals(0, ok.code(), ok.out());
            assertEquals("200 []", ok.out().strip());

            final Curl noCert = curl("--cacert", ca.toString(), url + "/workers");
            assertNotEquals(0, noCert.code(), "no client certificate: " + noCert.out());
            final Curl stranger = curl("--cacert", ca.toString(), "--cert", strangerCert.toString(), "--key",
                strangerKey.toString(), url + "/workers");
            assertNotEquals(0, stranger.code(), "a certificate the CA did not sign: " + stranger.out());
            final Curl plain = curl("http://127.0.0.1:" + http.port() + "/workers");
            assertTrue(plain.code() != 0 || !plain.out().startsWith("200"), "plain HTTP: " + plain.out());
            IndexHttpApiTest.await("three refusals counted", () -> http.pipeline().tlsRefused() == 3);
        }
        final IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
            () -> ServerTls.of(server[0], dir.resolve("none.key"), null, "--http-tls"));
        assertTrue(missing.getMessage().contains("--http-tls key file"), missing.getMessage());
        final IllegalArgumentException swapped = assertThrows(IllegalArgumentException.class,
            () -> ServerTls.of(server[1], server[0], null, "--http-tls"));
        assertTrue(swapped.getMessage().startsWith("--http-tls: cannot use"), swapped.getMessage());
    }

    /** @return a certificate and key signed by the test CA: {cert, key}. */
    private Path[] signed(final String name, final String subject, final String san) throws Exception {
        final Path key = dir.resolve(name + ".key");
        final Path csr = dir.resolve(name + ".csr");
        final Path cert = dir.resolve(name + ".crt");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key.toString(), "-out", csr.toString(), "-subj",
            subject);
        final List<String> sign = new ArrayList<>(List.of("x509", "-req", "-in", csr.toString(), "-CA",
            dir.resolve("ca.crt").toString(), "-CAkey", dir.resolve("ca.key").toString(), "-CAcreateserial", "-out",
            cert.toString(), "-days", "1"));
        if (san != null) {
            final Path ext = dir.resolve(name + ".ext");
            java.nio.file.Files.writeString(ext, san + "\n");
            sign.addAll(List.of("-extfile", ext.toString()));
        }
        openssl(sign.toArray(String[]::new));
        return new Path[] {cert, key};
    }

    private static void openssl(final String... args) throws IOException, InterruptedException {
        final List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "openssl hung");
        assertEquals(0, p.exitValue(), out);
    }

    private record Curl(int code, String out) {
    }

    /** curl printing "STATUS BODY"; exit code 0 when a response came. */
    private static Curl curl(final String... args) throws IOException, InterruptedException {
        final List<String> cmd = new ArrayList<>(List.of("curl", "-sS", "--max-time", "10", "-o", "-", "-w",
            "\n%{http_code}"));
        cmd.addAll(List.of(args));
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS), "curl hung");
        final int nl = out.lastIndexOf('\n');
        return new Curl(p.exitValue(), p.exitValue() == 0 ? out.substring(nl + 1) + " " + out.substring(0, nl)
            : out);
    }
}
