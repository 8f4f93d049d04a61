package io.kvidx.daemon.serve;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A raw HTTP/1.1 client for tests: one request per connection ({@code Connection: close}), exactly the headers given
 * (no {@code Content-Type} unless named), the body written from another thread while the answer is read, so a server
 * that answers before it has read the whole body (413) is heard.
 */
final class RawHttp {
    /**
     * An answer.
     *
     * @param status  the status code.
     * @param headers its headers, names in lower case.
     * @param body    its body.
     */
    record Reply(int status, Map<String, String> headers, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    private final int port;

    RawHttp(final int port) {
        this.port = port;
    }

    Reply send(final String method, final String path, final Map<String, String> headers, final byte[] body)
        throws Exception {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            socket.setSoTimeout(20_000);
            final StringBuilder head = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\n")
                .append("Host: 127.0.0.1:").append(port).append("\r\nConnection: close\r\n");
            headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
            if (body != null) {
                head.append("Content-Length: ").append(body.length).append("\r\n");
            }
            head.append("\r\n");
            final OutputStream out = socket.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
            out.flush();
            final CompletableFuture<Void> written = body == null ? CompletableFuture.completedFuture(null)
                : CompletableFuture.runAsync(() -> {
                    try {
                        out.write(body);
                        out.flush();
                    } catch (final IOException ex) {
                        // the server answered and closed before reading it all (413): the answer is read below
                    }
                });
            final Reply reply = read(socket.getInputStream());
            written.join();
            return reply;
        }
    }

    private static Reply read(final InputStream in) throws IOException {
        final String status = line(in);
        if (status == null || !status.startsWith("HTTP/1.1 ")) {
            throw new IOException("no HTTP answer: " + status);
        }
        final Map<String, String> headers = new LinkedHashMap<>();
        for (String l = line(in); l != null && !l.isEmpty(); l = line(in)) {
            final int colon = l.indexOf(':');
            headers.put(l.substring(0, colon).trim().toLowerCase(Locale.ROOT), l.substring(colon + 1).trim());
        }
        final String length = headers.get("content-length");
        final byte[] body = length != null ? in.readNBytes(Integer.parseInt(length)) : in.readAllBytes();
        return new Reply(Integer.parseInt(status.substring(9, 12)), headers, body);
    }

    private static String line(final InputStream in) throws IOException {
        final ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c = in.read(); c >= 0; c = in.read()) {
            if (c == '\n') {
                final byte[] bytes = b.toByteArray();
                final int n = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                return new String(bytes, 0, n, StandardCharsets.US_ASCII);
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.US_ASCII);
    }
}
