package io.kvidx.daemon.serve;

import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A keep-alive client that pipelines its requests gets the answers in request order, although a registration and a
 * snapshot complete on the daemon's own threads while a health check is answered on the event loop at once (issue
 * 35). Fails without the serving layer's RequestSequencer in the API's pipeline: the health answer then overtakes the
 * registration's.
 */
@Timeout(60)
class HttpPipeliningTest {
    @TempDir
    Path dir;

    @Test
    void shouldAnswerPipelinedRequestsInOrder() throws Exception {
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir));
             Socket s = new Socket(InetAddress.getLoopbackAddress(), daemon.httpPort())) {
            s.setSoTimeout(20_000);
            final String register = "{\"instance_id\":\"p1\",\"endpoint\":\"tcp://127.0.0.1:9\","
                + "\"model_name\":\"m\"}";
            final OutputStream out = s.getOutputStream();
            out.write(("POST /register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                + register.length() + "\r\n\r\n" + register
                + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /dump HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            final InputStream in = s.getInputStream();
            final List<String> statuses = new ArrayList<>();
            for (int k = 0; k < 4; k++) {
                statuses.add(readAnswer(in));
            }
            assertEquals(List.of("201", "200", "200", "404"), statuses,
                "register, health, dump, an unknown path: answered in request order");
        }
    }

    /** Reads one answer (status line, headers, a Content-Length body); returns its status. */
    private static String readAnswer(final InputStream in) throws Exception {
        final StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            final int c = in.read();
            if (c < 0) {
                throw new AssertionError("the connection closed after " + head);
            }
            head.append((char) c);
        }
        int length = 0;
        for (final String line : head.toString().split("\r\n")) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        in.readNBytes(length);
        return head.substring(9, 12);
    }
}
