package io.kvidx.routing.exec;

import io.kvidx.client.json.MiniJson;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Rewrites a request for disaggregated serving: the body sent to the prefill pod, and the body sent to the decode
 * pod given the prefill pod's answer.
 *
 * <p><b>Note:</b> implementations are thread safe.
 */
public interface PrefillDecodeAdapter {
    /**
     * @param body the client's body.
     * @return the body for the prefill pod.
     */
    byte[] prefillBody(byte[] body);

    /**
     * @param body            the client's body.
     * @param prefillResponse the prefill pod's full answer.
     * @return the body for the decode pod.
     */
    byte[] decodeBody(byte[] body, byte[] prefillResponse);

    /**
     * vLLM's disaggregated prefill convention (P/D connectors such as NIXL): the prefill request asks for one
     * token, without streaming, with {@code kv_transfer_params.do_remote_decode = true}; the decode request is the
     * client's request plus the {@code kv_transfer_params} the prefill pod returned.
     *
     * @return the adapter.
     */
    static PrefillDecodeAdapter vllm() {
        return new PrefillDecodeAdapter() {
            @Override
            public byte[] prefillBody(final byte[] body) {
                final Map<String, Object> m = object(body);
                m.put("max_tokens", 1L);
                if (m.containsKey("max_completion_tokens")) {
                    m.put("max_completion_tokens", 1L);
                }
                m.put("stream", Boolean.FALSE);
                m.remove("stream_options");
                final Map<String, Object> kv = new LinkedHashMap<>();
                kv.put("do_remote_decode", Boolean.TRUE);
                kv.put("do_remote_prefill", Boolean.FALSE);
                kv.put("remote_engine_id", null);
                kv.put("remote_block_ids", null);
                kv.put("remote_host", null);
                kv.put("remote_port", null);
                m.put("kv_transfer_params", kv);
                return MiniJson.write(m).getBytes(StandardCharsets.UTF_8);
            }

            @Override
            public byte[] decodeBody(final byte[] body, final byte[] prefillResponse) {
                final Map<String, Object> m = object(body);
                final Object kv = object(prefillResponse).get("kv_transfer_params");
                if (kv != null) {
                    m.put("kv_transfer_params", kv);
                }
                return MiniJson.write(m).getBytes(StandardCharsets.UTF_8);
            }

            @SuppressWarnings("unchecked")
            private Map<String, Object> object(final byte[] json) {
                final Object v = MiniJson.parse(new String(json, StandardCharsets.UTF_8));
                if (!(v instanceof Map<?, ?>)) {
                    throw new IllegalArgumentException("expected a JSON object");
                }
                return (Map<String, Object>) v;
            }
        };
    }
}
