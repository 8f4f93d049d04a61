package io.kvidx.daemon.writer;

import org.agrona.DirectBuffer;

/**
 * Sees each message a transport offers the writers ({@link WriterPool#tap}), before it is queued: a JetStream relay
 * publishes them (ADR 0024). The buffer is the transport's: copy what is kept.
 *
 * <p><b>Note:</b> called on the offering transports' threads, several at once for different pods; all messages of
 * one pod come from the thread of its transport, in the order they are offered.
 */
@FunctionalInterface
public interface EventTap {
    /**
     * @param pod      pod handle ({@link PodDirectory}).
     * @param type     a {@link WriterMessages} type.
     * @param src      payload buffer (valid during this call only).
     * @param offset   payload offset.
     * @param length   payload length (0 for none).
     * @param sequence the publisher's sequence of an engine batch or event; -1 for a control message.
     */
    void offered(int pod, int type, DirectBuffer src, int offset, int length, long sequence);

    /**
     * @return a position past every message offered so far ({@link WriterPool#producerPositions()} appends it), or
     * -1 when the tap takes no part in the pool's barrier.
     */
    default long position() {
        return -1;
    }

    /**
     * @param position a position {@link #position()} returned.
     * @return true once the tap is done with every message offered before it (a relay: the stream acknowledged
     * them); {@link WriterPool#appliedUpTo} waits for it too, so that the ZeroMQ checkpoints never record a sequence
     * the tap has not finished.
     */
    default boolean passed(final long position) {
        return true;
    }
}
