package io.kvidx.bench;

import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * The floor under any HTTP figure on this machine: a request of the same size sent over a loopback TCP connection
 * to a thread that answers with a reply of the same size, no HTTP and no index, timed by the same kind of client as
 * {@link HttpQueryBench}'s. The answering thread blocks in its read, or spins on a non-blocking socket, as the HTTP
 * server's event loops do ({@code --http-idle}). On a VM most of it is the threads' wake-ups.
 *
 * <p><b>Note:</b> one measurement at a time; its answering thread ends with the connection.
 */
final class LoopbackFloor {
    private LoopbackFloor() {
    }

    /**
     * @param requestBytes  bytes sent per round trip.
     * @param responseBytes bytes answered.
     * @param spin          true: the answering thread spins; false: it blocks.
     * @param seconds       measured seconds (after as long a warm-up as a fifth of them).
     * @return round-trip times, ns.
     * @throws IOException when a socket fails.
     */
    static Histogram measure(final int requestBytes, final int responseBytes, final boolean spin,
        final double seconds) throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            final Thread answering = new Thread(() -> answer(server, requestBytes, responseBytes, spin),
                "loopback-floor");
            answering.setDaemon(true);
            answering.start();
            final Histogram h = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(),
                ((InetSocketAddress) server.getLocalAddress()).getPort())) {
                s.setTcpNoDelay(true);
                final OutputStream out = s.getOutputStream();
                final InputStream in = s.getInputStream();
                final byte[] request = new byte[requestBytes];
                final byte[] buf = new byte[Math.max(65536, responseBytes)];
                final long warm = System.nanoTime() + (long) (seconds * 2e8);
                final long end = warm + (long) (seconds * 1e9);
                long now;
                while ((now = System.nanoTime()) < end) {
                    out.write(request);
                    int got = 0;
                    while (got < responseBytes) {
                        final int n = in.read(buf, 0, buf.length);
                        if (n < 0) {
                            throw new IOException("the answering thread closed the connection");
                        }
                        got += n;
                    }
                    final long t = System.nanoTime();
                    if (now >= warm) {
                        h.recordValue(Math.min(t - now, TimeUnit.SECONDS.toNanos(10)));
                    }
                }
            }
            return h;
        }
    }

    private static void answer(final ServerSocketChannel server, final int requestBytes, final int responseBytes,
        final boolean spin) {
        try (SocketChannel c = server.accept()) {
            c.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
            c.configureBlocking(!spin);
            final ByteBuffer in = ByteBuffer.allocateDirect(Math.max(65536, requestBytes));
            final ByteBuffer reply = ByteBuffer.allocateDirect(responseBytes);
            int pending = 0;
            while (true) {
                in.clear();
                final int n = c.read(in);
                if (n < 0) {
                    return;
                }
                if (n == 0) {
                    Thread.onSpinWait();
                    continue;
                }
                pending += n;
                while (pending >= requestBytes) {
                    pending -= requestBytes;
                    reply.clear();
                    while (reply.hasRemaining()) {
                        c.write(reply);
                    }
                }
            }
        } catch (final IOException ex) {
            // the client closed: done
        }
    }
}
