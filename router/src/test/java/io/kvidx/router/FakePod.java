package io.kvidx.router;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Function;

/**
 * A pod written in the test: a loopback HTTP/1.1 server that records every request it receives (headers in order,
 * body) and answers each with bytes the test scripts, exactly as given (so it can send any header and any framing).
 * Keeps a connection open for the next request unless the scripted answer says {@code Connection: close}.
 */
final class FakePod implements AutoCloseable {
    /**
     * A request the pod received.
     *
     * @param method  method.
     * @param uri     request target.
     * @param headers name, value pairs in order.
     * @param body    body.
     */
    record Request(String method, String uri, List<String[]> headers, byte[] body) {
        /** @return the first value of a header, or null. */
        String header(final String name) {
            for (final String[] h : headers) {
                if (h[0].equalsIgnoreCase(name)) {
                    return h[1];
                }
            }
            return null;
        }

        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    final BlockingQueue<Request> requests = new LinkedBlockingQueue<>();
    private final ServerSocket server;
    private final Function<Request, byte[]> answer;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    /**
     * @param answer the bytes to answer a request with.
     */
    FakePod(final Function<Request, byte[]> answer) throws IOException {
        this.answer = answer;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = Thread.ofPlatform().daemon().name("fake-pod-" + server.getLocalPort()).start(this::accept);
    }

    int port() {
        return server.getLocalPort();
    }

    String url() {
        return "http://127.0.0.1:" + port();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                final Socket s = server.accept();
                open.add(s);
                Thread.ofPlatform().daemon().name("fake-pod-conn").start(() -> serve(s));
            } catch (final IOException ex) {
                return;
            }
        }
    }

    private void serve(final Socket s) {
        try (s) {
            final InputStream in = new BufferedInputStream(s.getInputStream());
            final OutputStream out = s.getOutputStream();
            while (true) {
                final String requestLine = RawHttp.line(in);
                if (requestLine == null || requestLine.isEmpty()) {
                    return;
                }
                final String[] parts = requestLine.split(" ");
                final List<String[]> headers = new ArrayList<>();
                String h;
                int length = 0;
                while ((h = RawHttp.line(in)) != null && !h.isEmpty()) {
                    final int colon = h.indexOf(':');
                    final String name = h.substring(0, colon).trim();
                    final String value = h.substring(colon + 1).trim();
                    headers.add(new String[] {name, value});
                    if (name.equalsIgnoreCase("content-length")) {
                        length = Integer.parseInt(value);
                    }
                }
                final Request r = new Request(parts[0], parts[1], headers, in.readNBytes(length));
                requests.add(r);
                final byte[] bytes = answer.apply(r);
                out.write(bytes);
                out.flush();
                if (new String(bytes, StandardCharsets.ISO_8859_1).toLowerCase().contains("\r\nconnection: close")) {
                    return;
                }
            }
        } catch (final IOException ex) {
            // the router closed the connection
        } finally {
            open.remove(s);
        }
    }

    /**
     * @param status      status code.
     * @param contentType content type.
     * @param body        body.
     * @param headers     extra header lines.
     * @return a response with a Content-Length.
     */
    static byte[] response(final int status, final String contentType, final String body, final String... headers) {
        final byte[] b = body.getBytes(StandardCharsets.UTF_8);
        final StringBuilder s = new StringBuilder("HTTP/1.1 ").append(status).append(" X\r\nContent-Type: ")
            .append(contentType).append("\r\nContent-Length: ").append(b.length).append("\r\n");
        for (final String h : headers) {
            s.append(h).append("\r\n");
        }
        s.append("\r\n").append(body);
        return s.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * @param events  SSE events (each sent as one chunk).
     * @param headers extra header lines.
     * @return a chunked {@code text/event-stream} response.
     */
    static byte[] stream(final List<String> events, final String... headers) {
        final StringBuilder s = new StringBuilder("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            + "Transfer-Encoding: chunked\r\n");
        for (final String h : headers) {
            s.append(h).append("\r\n");
        }
        s.append("\r\n");
        for (final String e : events) {
            s.append(Integer.toHexString(e.getBytes(StandardCharsets.UTF_8).length)).append("\r\n").append(e)
                .append("\r\n");
        }
        s.append("0\r\n\r\n");
        return s.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (final Socket s : open) {
            s.close();
        }
        try {
            acceptor.join(2_000);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
