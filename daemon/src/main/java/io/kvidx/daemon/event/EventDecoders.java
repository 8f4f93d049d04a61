package io.kvidx.daemon.event;

import java.util.Objects;
import java.util.function.Supplier;

/**
 * Makes the decoders of each event format a writer agent is sent: vLLM's and SGLang's msgpack batches and kvidx's
 * SBE events. Each writer agent calls every supplier once, on construction, and owns what it gets (decoders are not
 * thread safe). The daemon's are {@code io.kvidx.daemon.ingest.EngineDecoders#standard()}.
 *
 * @param vllm   decoders of vLLM {@code KVEventBatch} payloads.
 * @param sglang decoders of SGLang {@code KVEventBatch} payloads.
 * @param sbe    decoders of kvidx SBE events (already checked by the transport's frame check).
 */
public record EventDecoders(Supplier<EventDecoder> vllm, Supplier<EventDecoder> sglang, Supplier<EventDecoder> sbe) {
    /**
     * @param vllm   decoders of vLLM batches.
     * @param sglang decoders of SGLang batches.
     * @param sbe    decoders of SBE events.
     */
    public EventDecoders {
        Objects.requireNonNull(vllm, "vllm");
        Objects.requireNonNull(sglang, "sglang");
        Objects.requireNonNull(sbe, "sbe");
    }
}
