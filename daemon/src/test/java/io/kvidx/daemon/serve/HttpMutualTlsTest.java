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

import java.net.InetSocketAddress;
import java.nio.file.Path;

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
        final TestCertificates certs = TestCertificates.make(dir);
        final Path ca = certs.ca();
        final Path[] server = {certs.serverCert(), certs.serverKey()};
        final Path[] client = {certs.clientCert(), certs.clientKey()};
        final Path strangerKey = certs.strangerKey();
        final Path strangerCert = certs.strangerCert();

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
            final TlsCurl ok = TlsCurl.run("--cacert", ca.toString(), "--cert", client[0].toString(), "--key",
                client[1].toString(), url + "/workers");
            assertEquals(0, ok.code(), ok.out());
            assertEquals("200 []", ok.out().strip());

            final TlsCurl noCert = TlsCurl.run("--cacert", ca.toString(), url + "/workers");
            assertNotEquals(0, noCert.code(), "no client certificate: " + noCert.out());
            final TlsCurl stranger = TlsCurl.run("--cacert", ca.toString(), "--cert", strangerCert.toString(), "--key",
                strangerKey.toString(), url + "/workers");
            assertNotEquals(0, stranger.code(), "a certificate the CA did not sign: " + stranger.out());
            final TlsCurl plain = TlsCurl.run("http://127.0.0.1:" + http.port() + "/workers");
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
}
