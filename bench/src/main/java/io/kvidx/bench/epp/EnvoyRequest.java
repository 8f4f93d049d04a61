package io.kvidx.bench.epp;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What Envoy's ext_proc filter sends the endpoint picker for one HTTP request, built once and sent as often as the
 * load asks (protobuf messages are immutable): the request headers (pseudo-headers first, as Envoy 1.33+ sends them
 * with {@code raw_value}, and the {@code protocol_config} of the body mode on this first message), then the body in
 * chunks of at most {@code chunkBytes}, the last ending the stream. No trailers, no subset hint in the filter
 * metadata (GIE's gateways set one only when endpoint subsetting is configured).
 *
 * <p>How Envoy sends them, per mode ({@code processing_mode: request_header_mode SEND}):
 * <ul>
 *   <li>{@link Mode#BUFFERED}: the headers; the body (buffered whole by Envoy meanwhile) only once the headers'
 *   answer came back; the request goes upstream on the body's answer, which carries the pick. Two round trips.</li>
 *   <li>{@link Mode#STREAMED} (with {@code send_body_without_waiting_for_header_response}): the headers and every
 *   chunk at once; the headers' answer carries the pick, then one answer per chunk; the request has gone upstream
 *   whole on the last chunk's answer.</li>
 *   <li>{@link Mode#FULL_DUPLEX_STREAMED} (GIE's manifests): the headers and every chunk at once; the headers' answer
 *   carries the pick, then the body comes back as streamed mutations, the last ending the stream.</li>
 * </ul>
 *
 * @param mode      the body mode.
 * @param headers   the first message.
 * @param body      the body's chunks.
 * @param answers   the answers that release the whole request upstream (the last one stops the clock).
 * @param bodyBytes the body's size.
 */
record EnvoyRequest(Mode mode, ProcessingRequest headers, List<ProcessingRequest> body, int answers, int bodyBytes) {
    /** The EPP's largest streamed body mutation (its {@code EppLimits.STREAMED_CHUNK_BYTES}). */
    static final int EPP_STREAMED_CHUNK_BYTES = 62_000;
    /** The header and metadata key of the pick (GIE's protocol). */
    static final String DESTINATION = "x-gateway-destination-endpoint";

    /** The request body modes measured. */
    enum Mode {
        /** Headers, their answer, then the whole body (GIE's default before full duplex). */
        BUFFERED(BodySendMode.BUFFERED),
        /** Headers and chunks without waiting; one answer each. */
        STREAMED(BodySendMode.STREAMED),
        /** Headers and chunks without waiting; the body echoed back as mutations. */
        FULL_DUPLEX_STREAMED(BodySendMode.FULL_DUPLEX_STREAMED);

        final BodySendMode envoy;

        Mode(final BodySendMode envoy) {
            this.envoy = envoy;
        }

        /** @return the option's spelling: buffered, streamed, full-duplex-streamed. */
        String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        /**
         * @param s an option's value.
         * @return the mode.
         * @throws IllegalArgumentException when it names none.
         */
        static Mode of(final String s) {
            for (final Mode m : values()) {
                if (m.label().equals(s)) {
                    return m;
                }
            }
            throw new IllegalArgumentException("unknown body mode '" + s + "' (buffered, streamed,"
                + " full-duplex-streamed)");
        }
    }

    /**
     * @param mode       the body mode.
     * @param path       {@code /v1/completions} or {@code /v1/chat/completions}.
     * @param body       the JSON body.
     * @param chunkBytes largest body chunk (Envoy's read size: 16 KiB frames from an HTTP/2 client).
     * @return the messages.
     */
    static EnvoyRequest of(final Mode mode, final String path, final byte[] body, final int chunkBytes) {
        final HeaderMap.Builder h = HeaderMap.newBuilder()
            .addHeaders(header(":authority", "gateway.example.com"))
            .addHeaders(header(":path", path))
            .addHeaders(header(":method", "POST"))
            .addHeaders(header(":scheme", "https"))
            .addHeaders(header("content-type", "application/json"))
            .addHeaders(header("content-length", Integer.toString(body.length)))
            .addHeaders(header("user-agent", "OpenAI/Python 1.99.0"))
            .addHeaders(header("accept", "application/json"))
            .addHeaders(header("x-forwarded-proto", "https"))
            .addHeaders(header("x-request-id", "5d1c3f0e-9a8b-4c7d-8e6f-0a1b2c3d4e5f"));
        final ProcessingRequest headers = ProcessingRequest.newBuilder()
            .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(h).setEndOfStream(false))
            .setProtocolConfig(ProtocolConfiguration.newBuilder().setRequestBodyMode(mode.envoy)
                .setResponseBodyMode(mode == Mode.FULL_DUPLEX_STREAMED ? BodySendMode.FULL_DUPLEX_STREAMED
                    : BodySendMode.NONE)
                .setSendBodyWithoutWaitingForHeaderResponse(mode == Mode.STREAMED))
            .build();
        final List<ProcessingRequest> chunks = new ArrayList<>();
        final int size = mode == Mode.BUFFERED ? body.length : chunkBytes;
        for (int at = 0; at < body.length; at += size) {
            final int end = Math.min(body.length, at + size);
            chunks.add(ProcessingRequest.newBuilder().setRequestBody(HttpBody.newBuilder()
                .setBody(ByteString.copyFrom(body, at, end - at)).setEndOfStream(end == body.length)).build());
        }
        final int answers = switch (mode) {
            case BUFFERED -> 2;
            case STREAMED -> 1 + chunks.size();
            case FULL_DUPLEX_STREAMED -> 1 + (body.length + EPP_STREAMED_CHUNK_BYTES - 1) / EPP_STREAMED_CHUNK_BYTES;
        };
        return new EnvoyRequest(mode, headers, List.copyOf(chunks), answers, body.length);
    }

    private static HeaderValue header(final String key, final String value) {
        return HeaderValue.newBuilder().setKey(key).setRawValue(ByteString.copyFromUtf8(value)).build();
    }

    /**
     * @param r an answer of the picker.
     * @return the endpoint it picked ({@value #DESTINATION} set on the headers' or the body's answer), or null.
     */
    static String pickOf(final ProcessingResponse r) {
        final var common = r.hasRequestHeaders() ? r.getRequestHeaders().getResponse()
            : r.hasRequestBody() ? r.getRequestBody().getResponse() : null;
        if (common == null || !common.hasHeaderMutation()) {
            return null;
        }
        for (final var o : common.getHeaderMutation().getSetHeadersList()) {
            if (DESTINATION.equals(o.getHeader().getKey())) {
                return o.getHeader().getRawValue().toStringUtf8();
            }
        }
        return null;
    }

    /**
     * @param r an answer of the picker.
     * @return whether it carries the pick.
     */
    static boolean isPick(final ProcessingResponse r) {
        return r.hasRequestHeaders() && r.getRequestHeaders().getResponse().hasHeaderMutation()
            || r.hasRequestBody() && r.getRequestBody().getResponse().hasHeaderMutation();
    }
}
