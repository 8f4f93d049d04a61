package io.kvidx.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.stub.StreamObserver;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * What Envoy's ext_proc filter sends, message by message (headers with pseudo-headers and the protocol
 * configuration on the first message, the subset in the filter metadata, body chunks, trailers), and a stream that
 * collects the picker's answers.
 */
final class Envoy {
    private Envoy() {
    }

    /** One ext_proc stream seen from Envoy's side. */
    static final class Stream implements StreamObserver<ProcessingResponse> {
        final LinkedBlockingQueue<Object> received = new LinkedBlockingQueue<>();
        private static final Object DONE = new Object();
        final StreamObserver<ProcessingRequest> requests;

        Stream(final io.grpc.Channel channel) {
            this.requests = ExternalProcessorGrpc.newStub(channel).process(this);
        }

        Stream send(final ProcessingRequest... messages) {
            for (final ProcessingRequest m : messages) {
                requests.onNext(m);
            }
            return this;
        }

        /** The next answer, or null when the stream ended (fails after 5 s). */
        ProcessingResponse next() throws InterruptedException {
            final Object o = received.poll(5, TimeUnit.SECONDS);
            if (o == null) {
                throw new AssertionError("no answer within 5 s: the stream hangs");
            }
            if (o instanceof Throwable t) {
                throw new AssertionError("stream failed: " + t, t);
            }
            return o == DONE ? null : (ProcessingResponse) o;
        }

        /** Collects answers until the picker ends the stream. */
        List<ProcessingResponse> untilEnd() throws InterruptedException {
            final List<ProcessingResponse> all = new ArrayList<>();
            ProcessingResponse r;
            while ((r = next()) != null) {
                all.add(r);
            }
            return all;
        }

        /** Collects n answers. */
        List<ProcessingResponse> take(final int n) throws InterruptedException {
            final List<ProcessingResponse> all = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                final ProcessingResponse r = next();
                if (r == null) {
                    throw new AssertionError("stream ended after " + all + ", expected " + n + " answers");
                }
                all.add(r);
            }
            return all;
        }

        /** Half-closes, as Envoy does when the exchange ended, and expects the picker to end too. */
        void finish() throws InterruptedException {
            requests.onCompleted();
            final ProcessingResponse r = next();
            if (r != null) {
                throw new AssertionError("unexpected answer after the exchange: " + r);
            }
        }

        @Override
        public void onNext(final ProcessingResponse value) {
            received.add(value);
        }

        @Override
        public void onError(final Throwable t) {
            received.add(t);
        }

        @Override
        public void onCompleted() {
            received.add(DONE);
        }
    }

    static HeaderValue header(final String k, final String v) {
        return HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v)).build();
    }

    /** Envoy's request headers: pseudo-headers, content type, a request id, the protocol configuration. */
    static ProcessingRequest headers(final String method, final String path, final BodySendMode mode,
        final List<String> subset, final boolean endOfStream, final HeaderValue... extra) {
        final HeaderMap.Builder h = HeaderMap.newBuilder();
        if (method != null) {
            h.addHeaders(header(":method", method));
        }
        h.addHeaders(header(":scheme", "http")).addHeaders(header(":authority", "gateway.example"));
        if (path != null) {
            h.addHeaders(header(":path", path));
        }
        h.addHeaders(header("content-type", "application/json")).addHeaders(header("x-request-id", "r-1"));
        for (final HeaderValue v : extra) {
            h.addHeaders(v);
        }
        final ProcessingRequest.Builder b = ProcessingRequest.newBuilder().setRequestHeaders(HttpHeaders.newBuilder()
            .setHeaders(h).setEndOfStream(endOfStream));
        if (mode != null) {
            b.setProtocolConfig(ProtocolConfiguration.newBuilder().setRequestBodyMode(mode)
                .setResponseBodyMode(mode).setSendBodyWithoutWaitingForHeaderResponse(mode == BodySendMode.STREAMED));
        }
        if (subset != null) {
            final ListValue.Builder l = ListValue.newBuilder();
            for (final String s : subset) {
                l.addValues(Value.newBuilder().setStringValue(s));
            }
            b.setMetadataContext(Metadata.newBuilder().putFilterMetadata(Answers.SUBSET_NAMESPACE, Struct.newBuilder()
                .putFields(Answers.SUBSET_KEY, Value.newBuilder().setListValue(l).build()).build()));
        }
        return b.build();
    }

    static ProcessingRequest post(final String path, final BodySendMode mode, final List<String> subset) {
        return headers("POST", path, mode, subset, false);
    }

    static ProcessingRequest body(final byte[] bytes, final int from, final int to, final boolean end) {
        return ProcessingRequest.newBuilder().setRequestBody(HttpBody.newBuilder()
            .setBody(ByteString.copyFrom(bytes, from, to - from)).setEndOfStream(end)).build();
    }

    static ProcessingRequest body(final String text, final boolean end) {
        final byte[] b = text.getBytes(StandardCharsets.UTF_8);
        return body(b, 0, b.length, end);
    }

    static ProcessingRequest trailers() {
        return ProcessingRequest.newBuilder().setRequestTrailers(HttpTrailers.newBuilder()
            .setTrailers(HeaderMap.newBuilder().addHeaders(header("x-trailer", "1")))).build();
    }

    /** The body split into chunks of {@code size} bytes, the last ending the stream unless trailers will. */
    static List<ProcessingRequest> chunks(final String text, final int size, final boolean endOnLast) {
        final byte[] b = text.getBytes(StandardCharsets.UTF_8);
        final List<ProcessingRequest> out = new ArrayList<>();
        for (int at = 0; at < b.length; at += size) {
            final int end = Math.min(b.length, at + size);
            out.add(body(b, at, end, endOnLast && end == b.length));
        }
        return out;
    }
}
