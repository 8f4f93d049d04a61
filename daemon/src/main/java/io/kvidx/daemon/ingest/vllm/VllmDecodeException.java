package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.EventDecodeException;

/**
 * The only exception {@link VllmEventDecoder} throws: the payload is not a well-formed vLLM event batch (truncated,
 * not msgpack, wrong outer shape, a length larger than the payload). The batch is dropped from the point of the
 * error; events decoded before it have already been delivered.
 *
 * <p><b>Note:</b> immutable.
 */
public final class VllmDecodeException extends EventDecodeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong, with the byte position.
     */
    public VllmDecodeException(final String message) {
        super(message);
    }
}
