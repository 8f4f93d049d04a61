package io.kvidx.router;

import io.kvidx.client.json.MiniJson;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a plain socket, for byte-level checks: requests written as given (any header, any framing), answers
 * read with their headers in order, their body de-chunked, and the chunk sizes kept.
 */
final class RawHttp implements AutoCloseable {
    /** Longest wait for a byte. */
    static final int READ_TIMEOUT_MS = 15_000;

    /**
     * An answer.
     *
     * @param status  HTTP status.
     * @param headers name, value pairs in order.
     * @param body    the body (de-chunked).
     * @param chunked true when it came with chunked transfer encoding.
     */
    record Response(int status, List<String[]> headers, byte[] body, boolean chunked) {
        /** @return the first value of a header (names case-insensitive), or null. */
        String header(final String name) {
            for (final String[] h : headers) {
                if (h[0].equalsIgnoreCase(name)) {
                    return h[1];
                }
            }
            return null;
        }

        /** @return the body as UTF-8. */
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        /** @return the body as a JSON object. */
        @SuppressWarnings("unchecked")
        Map<String, Object> json() {
            return (Map<String, Object>) MiniJson.parse(text());
        }

        @Override
        public String toString() {
            return status + " " + text();
        }
    }

    final Socket socket;
    final InputStream in;
    final OutputStream out;

    /**
     * Opens a connection.
     *
     * @param port        a loopback port.
     * @param receiveBuffer SO_RCVBUF to ask for before connecting, or 0 for the system's.
     */
    RawHttp(final int port, final int receiveBuffer) throws IOException {
        socket = new Socket();
        if (receiveBuffer > 0) {
            socket.setReceiveBufferSize(receiveBuffer);
        }
        socket.setSoTimeout(READ_TIMEOUT_MS);
        socket.setTcpNoDelay(true);
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        in = new BufferedInputStream(socket.getInputStream(), 8192);
        out = socket.getOutputStream();
    }

    RawHttp(final int port) throws IOException {
        this(port, 0);
    }

    /**
     * One request on a new connection, then closes it.
     *
     * @param port    a loopback port.
     * @param request the request's bytes.
     * @return the answer.
     */
    static Response exchange(final int port, final byte[] request) throws IOException {
        try (RawHttp c = new RawHttp(port)) {
            c.send(request);
            return c.read();
        }
    }

    /**
     * @param method  method.
     * @param path    path.
     * @param body    JSON body, or null.
     * @param headers extra header lines ({@code "name: value"}).
     * @return the request's bytes, with Host and (with a body) Content-Type and Content-Length.
     */
    static byte[] request(final String method, final String path, final String body, final String... headers) {
        final byte[] b = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        final StringBuilder s = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\n")
            .append("Host: 127.0.0.1\r\n");
        if (body != null) {
            s.append("Content-Type: application/json\r\nContent-Length: ").append(b.length).append("\r\n");
        }
        for (final String h : headers) {
            s.append(h).append("\r\n");
        }
        s.append("\r\n");
        final byte[] head = s.toString().getBytes(StandardCharsets.UTF_8);
        final byte[] all = new byte[head.length + b.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(b, 0, all, head.length, b.length);
        return all;
    }

    void send(final byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    /** Reads the status line and headers only (the body stays in {@link #in}). */
    Response readHead() throws IOException {
        final String status = line(in);
        if (status == null) {
            throw new EOFException("connection closed before an answer");
        }
        final String[] parts = status.split(" ", 3);
        final List<String[]> headers = new ArrayList<>();
        String h;
        while ((h = line(in)) != null && !h.isEmpty()) {
            final int colon = h.indexOf(':');
            headers.add(new String[] {h.substring(0, colon).trim(), h.substring(colon + 1).trim()});
        }
        final Response head = new Response(Integer.parseInt(parts[1]), headers, new byte[0], false);
        final String te = head.header("transfer-encoding");
        return new Response(head.status, headers, head.body, te != null
            && te.toLowerCase(Locale.ROOT).contains("chunked"));
    }

    /** Reads one whole answer. */
    Response read() throws IOException {
        final Response head = readHead();
        return new Response(head.status, head.headers, readBody(head), head.chunked);
    }

    /** Reads the body of the answer whose head was just read. */
    byte[] readBody(final Response head) throws IOException {
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (head.chunked) {
            while (true) {
                final int size = nextChunkSize();
                if (size == 0) {
                    break;
                }
                final byte[] data = in.readNBytes(size);
                if (data.length != size) {
                    throw new EOFException("chunk ended after " + data.length + " of " + size + " bytes");
                }
                body.write(data);
                chunkEnd();
            }
        } else if (head.header("content-length") != null) {
            final int n = Integer.parseInt(head.header("content-length"));
            final byte[] b = in.readNBytes(n);
            if (b.length != n) {
                throw new EOFException("body ended after " + b.length + " of " + n + " bytes");
            }
            body.write(b);
        } else {
            in.transferTo(body);
        }
        return body.toByteArray();
    }

    /**
     * Reads the next chunk's size line (and, at the end, the trailers); the chunk's data follows in {@link #in}.
     *
     * @return the chunk's size, 0 for the last chunk.
     */
    int nextChunkSize() throws IOException {
        final String sizeLine = line(in);
        if (sizeLine == null) {
            throw new EOFException("connection closed inside a chunked body");
        }
        final int semi = sizeLine.indexOf(';');
        final int size = Integer.parseInt((semi < 0 ? sizeLine : sizeLine.substring(0, semi)).trim(), 16);
        if (size == 0) {
            String t;
            while ((t = line(in)) != null && !t.isEmpty()) {
                // trailers: none expected
            }
            return 0;
        }
        return size;
    }

    /** Reads the CRLF ending a chunk's data. */
    void chunkEnd() throws IOException {
        final String rest = line(in);
        if (rest == null || !rest.isEmpty()) {
            throw new IOException("chunk data not followed by CRLF: '" + rest + "'");
        }
    }

    /** @return true when the peer closed the connection (reads to its end, bounded by the read timeout). */
    boolean closedByPeer() throws IOException {
        try {
            while (true) {
                if (in.read() < 0) {
                    return true;
                }
            }
        } catch (final SocketTimeoutException ex) {
            return false;
        } catch (final IOException ex) {
            return true; // reset
        }
    }

    /** @return a line without its CRLF (or LF), or null at the end of the stream. */
    static String line(final InputStream in) throws IOException {
        final ByteArrayOutputStream b = new ByteArrayOutputStream(128);
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                final byte[] l = b.toByteArray();
                final int n = l.length > 0 && l[l.length - 1] == '\r' ? l.length - 1 : l.length;
                return new String(l, 0, n, StandardCharsets.ISO_8859_1);
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
