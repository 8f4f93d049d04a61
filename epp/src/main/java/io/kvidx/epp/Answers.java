package io.kvidx.epp;

import com.fasterxml.jackson.core.JsonGenerator;
import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.StreamedBodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.envoyproxy.envoy.type.v3.StatusCode;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.Responses;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The ext_proc messages the picker sends, per GIE's endpoint picker protocol: the destination as the
 * {@value #DESTINATION} header and as the same key in the {@value #LB_NAMESPACE} dynamic metadata, pass-through
 * answers for the phases it does not change, the body sent back in FULL_DUPLEX_STREAMED mode, and immediate
 * responses with OpenAI's JSON error body.
 */
final class Answers {
    /** The header and metadata key naming the picked endpoint(s). */
    static final String DESTINATION = "x-gateway-destination-endpoint";
    /** The dynamic metadata namespace Envoy's original-destination load balancer reads. */
    static final String LB_NAMESPACE = "envoy.lb";
    /** The filter metadata namespace carrying the proxy's subset of endpoints. */
    static final String SUBSET_NAMESPACE = "envoy.lb.subset_hint";
    /** The key of the subset in {@link #SUBSET_NAMESPACE}. */
    static final String SUBSET_KEY = "x-gateway-destination-endpoint-subset";
    /** llm-d's header naming the prefill pod of a prefill/decode pick (read by its routing sidecar). */
    static final String PREFILLER = "x-prefiller-host-port";

    private static final ProcessingResponse HEADERS_CONTINUE = ProcessingResponse.newBuilder()
        .setRequestHeaders(HeadersResponse.getDefaultInstance()).build();
    private static final ProcessingResponse BODY_CONTINUE = ProcessingResponse.newBuilder()
        .setRequestBody(BodyResponse.getDefaultInstance()).build();
    private static final ProcessingResponse REQUEST_TRAILERS = ProcessingResponse.newBuilder()
        .setRequestTrailers(TrailersResponse.getDefaultInstance()).build();
    private static final ProcessingResponse RESPONSE_HEADERS = ProcessingResponse.newBuilder()
        .setResponseHeaders(HeadersResponse.getDefaultInstance()).build();
    private static final ProcessingResponse RESPONSE_BODY = ProcessingResponse.newBuilder()
        .setResponseBody(BodyResponse.getDefaultInstance()).build();
    private static final ProcessingResponse RESPONSE_TRAILERS = ProcessingResponse.newBuilder()
        .setResponseTrailers(TrailersResponse.getDefaultInstance()).build();

    private Answers() {
    }

    static ProcessingResponse headersContinue() {
        return HEADERS_CONTINUE;
    }

    static ProcessingResponse bodyContinue() {
        return BODY_CONTINUE;
    }

    static ProcessingResponse requestTrailers() {
        return REQUEST_TRAILERS;
    }

    static ProcessingResponse responseHeaders() {
        return RESPONSE_HEADERS;
    }

    static ProcessingResponse responseBody() {
        return RESPONSE_BODY;
    }

    static ProcessingResponse responseTrailers() {
        return RESPONSE_TRAILERS;
    }

    /**
     * The pick: the destination header (and the prefill pod's, for a prefill/decode pick) with the route cache
     * cleared, on the headers' answer (streamed modes) or the body's (buffered), and the dynamic metadata.
     *
     * @param pick      the pick.
     * @param onHeaders true to answer the request headers, false the request body.
     * @return the message.
     */
    static ProcessingResponse picked(final Picker.Pick pick, final boolean onHeaders) {
        final String value = pick.primary();
        final HeaderMutation.Builder mutation = HeaderMutation.newBuilder().addSetHeaders(header(DESTINATION, value));
        if (pick.prefill() != null) {
            mutation.addSetHeaders(header(PREFILLER, pick.prefill()));
        }
        final CommonResponse common = CommonResponse.newBuilder().setHeaderMutation(mutation)
            .setClearRouteCache(true).build();
        final ProcessingResponse.Builder b = ProcessingResponse.newBuilder().setDynamicMetadata(Struct.newBuilder()
            .putFields(LB_NAMESPACE, Value.newBuilder().setStructValue(Struct.newBuilder()
                .putFields(DESTINATION, Value.newBuilder().setStringValue(value).build())).build()));
        if (onHeaders) {
            b.setRequestHeaders(HeadersResponse.newBuilder().setResponse(common));
        } else {
            b.setRequestBody(BodyResponse.newBuilder().setResponse(common));
        }
        return b.build();
    }

    /**
     * A piece of the request body sent back (FULL_DUPLEX_STREAMED: Envoy forwards what the processor returns).
     *
     * @param body        the piece.
     * @param endOfStream whether it is the last.
     * @param request     true for the request body, false for the response's.
     * @return the message.
     */
    static ProcessingResponse streamedBody(final ByteString body, final boolean endOfStream, final boolean request) {
        final BodyResponse r = BodyResponse.newBuilder().setResponse(CommonResponse.newBuilder()
            .setBodyMutation(BodyMutation.newBuilder().setStreamedResponse(StreamedBodyResponse.newBuilder()
                .setBody(body).setEndOfStream(endOfStream)))).build();
        return request ? ProcessingResponse.newBuilder().setRequestBody(r).build()
            : ProcessingResponse.newBuilder().setResponseBody(r).build();
    }

    /**
     * An immediate response with OpenAI's error body (what {@code kvidx router} answers).
     *
     * @param status  the HTTP status.
     * @param type    the error's type.
     * @param message why.
     * @return the message.
     */
    static ProcessingResponse immediate(final int status, final String type, final String message) {
        final ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        try (JsonGenerator g = Responses.JSON.createGenerator(out)) {
            ErrorShape.OPENAI.write(g, new HttpError(status, type, message));
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
        final StatusCode code = StatusCode.forNumber(status);
        return ProcessingResponse.newBuilder().setImmediateResponse(ImmediateResponse.newBuilder()
            .setStatus(HttpStatus.newBuilder().setCode(code != null ? code : StatusCode.InternalServerError))
            .setHeaders(HeaderMutation.newBuilder().addSetHeaders(header("content-type", "application/json")))
            .setBody(ByteString.copyFrom(out.toByteArray()))
            .setDetails("kvidx-epp: " + type)).build();
    }

    private static HeaderValueOption header(final String key, final String value) {
        return HeaderValueOption.newBuilder().setHeader(HeaderValue.newBuilder().setKey(key)
            .setRawValue(ByteString.copyFrom(value, StandardCharsets.UTF_8))).build();
    }
}
