package io.kvidx.router;

import io.kvidx.daemon.serve.TestCertificates;
import io.kvidx.daemon.serve.TlsCurl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * kvidx router over mutual TLS (issue 35, item 2): openssl-made certificates, the real curl. A client with a certificate
 * the CA signed is answered; one without a certificate, with a stranger's, or speaking plain HTTP is not; mutual TLS
 * lets the router listen where other hosts reach it without --allow-remote, server TLS alone does not.
 */
@Timeout(60)
class RouterTlsTest {
    @TempDir
    Path work;

    @Test
    void shouldAnswerOnlyClientsWithACertificateTheCaSigned() throws Exception {
        final TestCertificates certs = TestCertificates.make(work);
        final RouterConfig c = Routers.config(work);
        c.pod("pod-a", "http://127.0.0.1:9", "model-a", null);
        c.tlsCert = certs.serverCert();
        c.tlsKey = certs.serverKey();
        c.tlsClientCa = certs.ca();
        try (RouterServer router = RouterServer.start(c)) {
            final String url = "https://localhost:" + router.port() + "/v1/models";
            final TlsCurl ok = TlsCurl.run("--cacert", certs.ca().toString(), "--cert", certs.clientCert().toString(),
                "--key", certs.clientKey().toString(), url);
            assertEquals(0, ok.code(), ok.out());
            assertTrue(ok.out().startsWith("200 ") && ok.out().contains("model-a"), ok.out());
            assertNotEquals(0, TlsCurl.run("--cacert", certs.ca().toString(), url).code(), "no client certificate");
            assertNotEquals(0, TlsCurl.run("--cacert", certs.ca().toString(), "--cert",
                certs.strangerCert().toString(), "--key", certs.strangerKey().toString(), url).code(), "a stranger's");
            final TlsCurl plain = TlsCurl.run("http://127.0.0.1:" + router.port() + "/v1/models");
            assertTrue(plain.code() != 0 || !plain.out().startsWith("200"), "plain HTTP: " + plain.out());
        }
        // Mutual TLS authenticates clients: another host's address is accepted; server TLS alone is not enough.
        final RouterConfig remote = Routers.config(work);
        remote.listen = "0.0.0.0:0";
        remote.tlsCert = certs.serverCert();
        remote.tlsKey = certs.serverKey();
        remote.tlsClientCa = certs.ca();
        remote.validate();
        remote.tlsClientCa = null;
        assertTrue(assertThrows(IllegalArgumentException.class, remote::validate).getMessage()
            .contains("--tls-client-ca"));
        final RouterConfig noCert = Routers.config(work);
        noCert.tlsClientCa = certs.ca();
        assertTrue(assertThrows(IllegalArgumentException.class, noCert::validate).getMessage()
            .contains("tls-client-ca"));
    }
}
