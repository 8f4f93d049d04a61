package io.kvidx.daemon.ingest.zmq;

import org.zeromq.ZMQ;

/**
 * Receives one ZeroMQ multipart message without waiting for its first frame (the rest of a multipart message is
 * delivered atomically, so reading it does not wait either).
 */
final class Multipart {
    private Multipart() {
    }

    /**
     * Receives one message into {@code frames}; frames beyond {@code frames.length} are read and dropped.
     *
     * @param socket the socket.
     * @param frames receives the first frames.
     * @return number of frames of the message (0 when none was waiting).
     */
    static int receive(final ZMQ.Socket socket, final byte[][] frames) {
        final byte[] first = socket.recv(ZMQ.DONTWAIT);
        if (first == null) {
            return 0;
        }
        frames[0] = first;
        int n = 1;
        while (socket.hasReceiveMore()) {
            final byte[] f = socket.recv(0);
            if (n < frames.length) {
                frames[n] = f;
            }
            n++;
        }
        return n;
    }
}
