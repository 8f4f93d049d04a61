package io.kvidx.daemon.serve;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Certificates for TLS tests, made by the real {@code openssl} (Debian package openssl) in a test's directory: a CA,
 * a server certificate for {@code localhost} and {@code 127.0.0.1} and a client certificate it signed, and a
 * stranger's self-signed one; all PEM, keys PKCS#8, valid for a day.
 *
 * @param ca           the CA's certificate.
 * @param serverCert   the server's certificate (CA-signed).
 * @param serverKey    its key.
 * @param clientCert   a client's certificate (CA-signed).
 * @param clientKey    its key.
 * @param strangerCert a self-signed certificate the CA did not sign.
 * @param strangerKey  its key.
 */
public record TestCertificates(Path ca, Path serverCert, Path serverKey, Path clientCert, Path clientKey,
    Path strangerCert, Path strangerKey) {

    /**
     * @param dir where the files go.
     * @return the certificates.
     * @throws Exception when openssl is missing or fails (its output in the message).
     */
    public static TestCertificates make(final Path dir) throws Exception {
        final Path ca = dir.resolve("ca.crt");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir.resolve("ca.key").toString(), "-out",
            ca.toString(), "-days", "1", "-subj", "/CN=kvidx-test-ca");
        final Path[] server = signed(dir, "server", "/CN=localhost");
        final Path[] client = signed(dir, "client", "/CN=client");
        final Path strangerKey = dir.resolve("stranger.key");
        final Path strangerCert = dir.resolve("stranger.crt");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", strangerKey.toString(), "-out",
            strangerCert.toString(), "-days", "1", "-subj", "/CN=stranger");
        return new TestCertificates(ca, server[0], server[1], client[0], client[1], strangerCert, strangerKey);
    }

    private static Path[] signed(final Path dir, final String name, final String subject) throws Exception {
        final Path key = dir.resolve(name + ".key");
        final Path csr = dir.resolve(name + ".csr");
        final Path cert = dir.resolve(name + ".crt");
        final Path ext = dir.resolve(name + ".ext");
        Files.writeString(ext, "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key.toString(), "-out", csr.toString(), "-subj",
            subject);
        openssl("x509", "-req", "-in", csr.toString(), "-CA", dir.resolve("ca.crt").toString(), "-CAkey",
            dir.resolve("ca.key").toString(), "-CAcreateserial", "-out", cert.toString(), "-days", "1", "-extfile",
            ext.toString());
        return new Path[] {cert, key};
    }

    private static void openssl(final String... args) throws IOException, InterruptedException {
        final List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("openssl hung: " + cmd);
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("openssl failed (" + p.exitValue() + "): " + cmd + "\n" + out);
        }
    }
}
