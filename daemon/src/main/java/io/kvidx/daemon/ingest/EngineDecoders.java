package io.kvidx.daemon.ingest;

import io.kvidx.daemon.event.EventDecoders;
import io.kvidx.daemon.ingest.sbe.SbeEventDecoder;
import io.kvidx.daemon.ingest.sglang.SglangEventDecoder;
import io.kvidx.daemon.ingest.vllm.VllmEventDecoder;

/**
 * The decoders of the formats the daemon's transports queue for its writers: vLLM's and SGLang's msgpack batches
 * (ZeroMQ) with their default limits, and kvidx's SBE events (Aeron).
 */
public final class EngineDecoders {
    private EngineDecoders() {
    }

    /**
     * @return the daemon's decoders, a fresh set per writer agent.
     */
    public static EventDecoders standard() {
        return new EventDecoders(VllmEventDecoder::new, SglangEventDecoder::new, SbeEventDecoder::new);
    }
}
