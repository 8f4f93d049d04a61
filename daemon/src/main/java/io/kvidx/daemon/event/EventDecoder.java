package io.kvidx.daemon.event;

import org.agrona.DirectBuffer;

/**
 * Decodes one message of an engine's wire format (a vLLM or SGLang msgpack batch, a kvidx SBE event) into the
 * reusable {@link BlockEvent} view and delivers its events, in order, to a {@link BlockEventListener}. The transports
 * only frame messages and queue them for the writers; the writer agents decode them through this interface, one
 * decoder per format and writer thread, so the writers depend on no wire format.
 *
 * <p>Safety: a decoder checks every length against the bytes it was given; a message that is not well formed ends
 * in an {@link EventDecodeException} (events delivered before it stay delivered, the rest is dropped).
 *
 * <p><b>Note:</b> not thread safe; one decoder per writer thread.
 */
@FunctionalInterface
public interface EventDecoder {
    /**
     * Decodes one message and delivers its events in order; a batch format ends with
     * {@link BlockEventListener#onBatchEnd}.
     *
     * @param buffer   the message's buffer.
     * @param offset   first byte.
     * @param length   message length.
     * @param listener receives the events.
     * @return number of events in the message (delivered or dropped).
     * @throws EventDecodeException when the message is not well formed.
     */
    int decode(DirectBuffer buffer, int offset, int length, BlockEventListener listener);
}
