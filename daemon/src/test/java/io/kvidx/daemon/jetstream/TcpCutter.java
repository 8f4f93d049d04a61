package io.kvidx.daemon.jetstream;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP forwarder in front of one server whose connections a test can cut (both sides closed at once) while
 * it keeps accepting new ones: one client's connection drops, the server and other clients are untouched.
 */
final class TcpCutter implements AutoCloseable {
    private final ServerSocket listener;
    private final int targetPort;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private final Thread acceptor;
    private volatile int cuts;
    private volatile boolean blocked;

    TcpCutter(final int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = Thread.ofPlatform().daemon().name("tcp-cutter").start(this::accept);
    }

    private void accept() {
        while (!listener.isClosed()) {
            try {
                final Socket client = listener.accept();
                if (blocked) {
                    close(client);
                    continue;
                }
                final Socket server = new Socket();
                server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 2_000);
                open.add(client);
                open.add(server);
                pump(client, server);
                pump(server, client);
            } catch (final IOException ex) {
                // closed, or the server is down: the client retries
            }
        }
    }

    private void pump(final Socket from, final Socket to) {
        Thread.ofPlatform().daemon().name("tcp-cutter-pump").start(() -> {
            final byte[] buffer = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (final IOException ex) {
                // cut or closed
            } finally {
                close(from);
                close(to);
            }
        });
    }

    private static void close(final Socket s) {
        try {
            s.close();
        } catch (final IOException ignored) {
            // already closed
        }
    }

    /**
     * @param refuse true: close every connection open now and each new one at once (the client keeps retrying);
     *               false: forward again.
     */
    void block(final boolean refuse) {
        blocked = refuse;
        if (refuse) {
            cut();
        }
    }

    /** Closes every connection open now. */
    void cut() {
        cuts++;
        for (final Socket s : open) {
            close(s);
        }
        open.clear();
    }

    /** @return the URL clients connect to. */
    String url() {
        return "nats://127.0.0.1:" + listener.getLocalPort();
    }

    @Override
    public void close() throws IOException {
        listener.close();
        cut();
        try {
            acceptor.join(2_000);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
