package io.kvidx.daemon.serve;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One request with the real {@code curl} (Debian package curl), for TLS tests whose client must present a PEM
 * certificate (the JDK's HTTP client reads no PEM keys).
 *
 * @param code curl's exit code: 0 when an answer came, another when the connection or handshake failed.
 * @param out  "STATUS BODY" when an answer came, else curl's error.
 */
public record TlsCurl(int code, String out) {
    /**
     * @param args curl's arguments (certificates, the URL).
     * @return what came of it.
     * @throws IOException          when curl cannot be started.
     * @throws InterruptedException when interrupted.
     */
    public static TlsCurl run(final String... args) throws IOException, InterruptedException {
        final List<String> cmd = new ArrayList<>(List.of("curl", "-sS", "--max-time", "10", "-o", "-", "-w",
            "\n%{http_code}"));
        cmd.addAll(List.of(args));
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("curl hung: " + cmd);
        }
        final int nl = out.lastIndexOf('\n');
        return new TlsCurl(p.exitValue(), p.exitValue() == 0 && nl >= 0
            ? out.substring(nl + 1) + " " + out.substring(0, nl) : out);
    }
}
