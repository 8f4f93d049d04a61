package io.kvidx.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.kvidx.epp.EppLimits.BodyMode;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.OpenAiRequest;
import io.netty.buffer.Unpooled;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One ext_proc stream: one HTTP request through the gateway. Reads the request headers ({@code :method},
 * {@code :path}, the session header, the subset in the filter metadata), accumulates the body up to the limit until
 * its end, has the {@link Picker} pick, and answers as GIE's endpoint picker protocol says for the body mode:
 * <ul>
 *   <li>BUFFERED: the headers are answered at once (continue); the whole body comes in one message, answered with the
 *       destination header mutation and the {@code envoy.lb} dynamic metadata.</li>
 *   <li>STREAMED: the headers' answer is held until the body ended (Envoy sends the chunks without waiting when
 *       {@code send_body_without_waiting_for_header_response} is set), then carries the destination; each chunk is
 *       then answered (continue), in order.</li>
 *   <li>FULL_DUPLEX_STREAMED (the reference EPP's): the headers' answer is held likewise; then the body goes back to
 *       Envoy as streamed body mutations of at most {@link EppLimits#STREAMED_CHUNK_BYTES} bytes, the last one
 *       ending the stream (or followed by the trailers' answer when trailers ended the request).</li>
 * </ul>
 * A request without a body (its headers end the stream: a GET) is picked without a prompt and answered on its
 * headers. Response-phase messages are passed through (their body echoed in FULL_DUPLEX_STREAMED). A request that cannot be
 * routed gets an immediate response (400, 404, 405, 408, 413, 503) with OpenAI's JSON error body, and the stream is
 * closed. Every stream is bounded: body size, a deadline from its first message to its answer.
 *
 * <p><b>Note:</b> gRPC calls a stream's observer one message at a time; the pick may come back on a tokenizing
 * thread and the deadline on the timer thread, so every entry point is {@code synchronized}.
 */
final class PickStream implements StreamObserver<ProcessingRequest> {
    private static final String COMPLETIONS = "/v1/completions";
    private static final String CHAT = "/v1/chat/completions";
    private static final ThreadLocal<OpenAiRequest> PARSERS = ThreadLocal.withInitial(OpenAiRequest::new);

    private enum Phase { START, BODY, DECIDING, ANSWERED, CLOSED }

    private final ServerCallStreamObserver<ProcessingResponse> out;
    private final Picker picker;
    private final EppLimits limits;
    private final EppMetrics metrics;
    private final String sessionHeader;
    private final ScheduledExecutorService timer;
    private final Runnable onEnd;
    private Phase phase = Phase.START;
    private BodyMode mode;
    private boolean responseFullDuplex;
    private boolean first = true;
    private boolean chat;
    private boolean bodyless;
    private String session;
    private Set<String> subset;
    private ByteString body = ByteString.EMPTY;
    private int chunks;
    private boolean trailersEnded;
    private long bodyEnded;
    private ScheduledFuture<?> deadline;
    private boolean ended;

    PickStream(final ServerCallStreamObserver<ProcessingResponse> out, final Picker picker, final EppLimits limits,
        final EppMetrics metrics, final String sessionHeader, final ScheduledExecutorService timer,
        final Runnable onEnd) {
        this.out = out;
        this.picker = picker;
        this.limits = limits;
        this.metrics = metrics;
        this.sessionHeader = sessionHeader;
        this.timer = timer;
        this.onEnd = onEnd;
        this.mode = limits.defaultBodyMode();
    }

    /** Refuses the stream at once (too many open). */
    synchronized void refuse() {
        first = false;
        immediate(503, "overloaded", "the picker has " + limits.maxStreams() + " streams open (max-streams)",
            "overloaded");
    }

    @Override
    public synchronized void onNext(final ProcessingRequest req) {
        if (first) {
            first = false;
            if (req.hasProtocolConfig()) {
                mode = mode(req.getProtocolConfig().getRequestBodyMode(), mode);
                responseFullDuplex = req.getProtocolConfig().getResponseBodyMode()
                    == BodySendMode.FULL_DUPLEX_STREAMED;
            }
            deadline = timer.schedule(this::expire, limits.streamDeadlineMs(), TimeUnit.MILLISECONDS);
        }
        switch (req.getRequestCase()) {
            case REQUEST_HEADERS -> headers(req);
            case REQUEST_BODY -> body(req.getRequestBody());
            case REQUEST_TRAILERS -> trailers();
            case RESPONSE_HEADERS -> send(Answers.responseHeaders());
            case RESPONSE_BODY -> {
                final HttpBody b = req.getResponseBody();
                send(responseFullDuplex ? Answers.streamedBody(b.getBody(), b.getEndOfStream(), false)
                    : Answers.responseBody());
            }
            case RESPONSE_TRAILERS -> send(Answers.responseTrailers());
            default -> refuseIfOpen(400, "an ext_proc message without a request or response part", "protocol");
        }
    }

    private static BodyMode mode(final BodySendMode m, final BodyMode otherwise) {
        return switch (m) {
            case BUFFERED, BUFFERED_PARTIAL -> BodyMode.BUFFERED;
            case STREAMED -> BodyMode.STREAMED;
            case FULL_DUPLEX_STREAMED -> BodyMode.FULL_DUPLEX_STREAMED;
            default -> otherwise; // NONE: no body will come; UNRECOGNIZED: keep the configured mode
        };
    }

    private void headers(final ProcessingRequest req) {
        if (phase != Phase.START) {
            refuseIfOpen(400, "request headers sent twice", "protocol");
            return;
        }
        final HttpHeaders h = req.getRequestHeaders();
        String method = null;
        String path = null;
        for (final HeaderValue v : h.getHeaders().getHeadersList()) {
            final String key = v.getKey().toLowerCase(java.util.Locale.ROOT);
            final String value = v.getRawValue().isEmpty() ? v.getValue() : v.getRawValue().toStringUtf8();
            switch (key) {
                case ":method" -> method = value;
                case ":path" -> path = value;
                default -> {
                    if (key.equals(sessionHeader)) {
                        session = value;
                    }
                }
            }
        }
        if (method == null || path == null) {
            immediate(400, OpenAiRequest.INVALID, "the request headers lack :method or :path", "bad_request");
            return;
        }
        chat = false;
        readSubset(req);
        if (h.getEndOfStream()) {
            // No body (a GET such as /v1/models): picked without a prompt, on the headers, as the reference EPP
            // routes a bodyless request to any ready endpoint.
            bodyless = true;
            phase = Phase.DECIDING;
            bodyEnded = System.nanoTime();
            picker.pick(null, null, session, subset, picked());
            return;
        }
        final int q = path.indexOf('?');
        final String p = q >= 0 ? path.substring(0, q) : path;
        if (!COMPLETIONS.equals(p) && !CHAT.equals(p)) {
            immediate(404, OpenAiRequest.INVALID, "the picker routes POST " + COMPLETIONS + " and " + CHAT
                + ", not " + p, "not_found");
            return;
        }
        if (!"POST".equals(method)) {
            immediate(405, OpenAiRequest.INVALID, p + " takes POST", "bad_request");
            return;
        }
        chat = CHAT.equals(p);
        phase = Phase.BODY;
        if (mode == BodyMode.BUFFERED) {
            send(Answers.headersContinue());
        }
    }

    private void readSubset(final ProcessingRequest req) {
        final Struct hint = req.getMetadataContext().getFilterMetadataMap().get(Answers.SUBSET_NAMESPACE);
        if (hint != null && hint.containsFields(Answers.SUBSET_KEY)) {
            final Value list = hint.getFieldsOrThrow(Answers.SUBSET_KEY);
            subset = new HashSet<>();
            for (final Value e : list.getListValue().getValuesList()) {
                subset.add(e.getStringValue());
            }
            if (list.hasStringValue()) {
                for (final String s : list.getStringValue().split(",")) {
                    subset.add(s.trim());
                }
            }
        }
    }

    private void body(final HttpBody b) {
        if (phase == Phase.START) {
            immediate(400, OpenAiRequest.INVALID, "a request body before the request headers", "protocol");
            return;
        }
        if (phase != Phase.BODY) {
            return; // after the body ended (or the stream was answered): nothing to answer
        }
        if ((long) body.size() + b.getBody().size() > limits.maxBodyBytes()) {
            immediate(413, OpenAiRequest.INVALID, "request body exceeds " + limits.maxBodyBytes()
                + " bytes (max-body-bytes)", "too_large");
            return;
        }
        body = body.concat(b.getBody());
        chunks++;
        if (b.getEndOfStream()) {
            decide();
        } else if (mode == BodyMode.BUFFERED) {
            // BUFFERED_PARTIAL sent what fitted in Envoy's buffer: the rest goes on without the picker.
            immediate(413, OpenAiRequest.INVALID, "request body larger than the proxy's buffer", "too_large");
        }
    }

    private void trailers() {
        if (phase == Phase.START) {
            immediate(400, OpenAiRequest.INVALID, "request trailers before the request headers", "protocol");
        } else if (phase == Phase.BODY) {
            trailersEnded = true; // the trailers end the body; their answer follows the pick's
            decide();
        } else if (phase == Phase.ANSWERED) {
            send(Answers.requestTrailers());
        }
    }

    private void decide() {
        phase = Phase.DECIDING;
        bodyEnded = System.nanoTime();
        if (body.isEmpty()) {
            immediate(400, OpenAiRequest.INVALID, "the request body is empty", "bad_request");
            return;
        }
        final OpenAiRequest parsed = PARSERS.get();
        try {
            parsed.parse(Unpooled.wrappedBuffer(body.asReadOnlyByteBuffer()), chat);
        } catch (final HttpError ex) {
            immediate(ex.status(), ex.code(), ex.getMessage(), "bad_request");
            return;
        }
        final String text = parsed.chat ? body.toStringUtf8() : null;
        picker.pick(parsed, text, session, subset, picked());
    }

    private Picker.Picked picked() {
        return new Picker.Picked() {
            @Override
            public void picked(final Picker.Pick pick) {
                answer(pick);
            }

            @Override
            public void refused(final int status, final String message) {
                refuseIfDeciding(status, message);
            }
        };
    }

    private synchronized void answer(final Picker.Pick pick) {
        if (phase != Phase.DECIDING) {
            return; // the deadline answered, or the stream went away
        }
        metrics.decisionSeconds.observe((System.nanoTime() - bodyEnded) / 1e9);
        if (pick == null) {
            immediate(503, "service_unavailable", subset != null ? "no endpoint of the subset "
                + subset + " can serve this request" : "no endpoint can serve this request", "no_endpoint");
            return;
        }
        phase = Phase.ANSWERED;
        cancelDeadline();
        metrics.requests.labelValues(pick.fallback() ? "fallback" : "picked").inc();
        metrics.predictedTokens.observe(pick.predictedTokens());
        if (bodyless) {
            send(Answers.picked(pick, true));
            return;
        }
        switch (mode) {
            case BUFFERED -> send(Answers.picked(pick, false));
            case STREAMED -> {
                send(Answers.picked(pick, true));
                for (int i = 0; i < chunks; i++) {
                    send(Answers.bodyContinue());
                }
            }
            default -> {
                send(Answers.picked(pick, true));
                final int n = body.size();
                for (int at = 0; at < n; at += EppLimits.STREAMED_CHUNK_BYTES) {
                    final int end = Math.min(n, at + EppLimits.STREAMED_CHUNK_BYTES);
                    send(Answers.streamedBody(body.substring(at, end), end == n && !trailersEnded, true));
                }
            }
        }
        if (trailersEnded) {
            send(Answers.requestTrailers());
        }
        body = ByteString.EMPTY;
    }

    private synchronized void refuseIfDeciding(final int status, final String message) {
        if (phase == Phase.DECIDING) {
            immediate(status, status == 503 ? "overloaded" : "internal_error", message, "refused");
        }
    }

    private void refuseIfOpen(final int status, final String message, final String outcome) {
        if (phase != Phase.CLOSED) {
            immediate(status, OpenAiRequest.INVALID, message, outcome);
        }
    }

    private synchronized void expire() {
        if (phase == Phase.START || phase == Phase.BODY) {
            immediate(408, OpenAiRequest.INVALID, "the request did not arrive within " + limits.streamDeadlineMs()
                + " ms (stream-deadline-ms)", "deadline");
        } else if (phase == Phase.DECIDING) {
            immediate(503, "service_unavailable", "no pick within " + limits.streamDeadlineMs()
                + " ms (stream-deadline-ms)", "deadline");
        }
    }

    /** Answers with an immediate response and ends the stream. */
    private void immediate(final int status, final String type, final String message, final String outcome) {
        metrics.requests.labelValues(outcome).inc();
        send(Answers.immediate(status, type, message));
        phase = Phase.CLOSED;
        body = ByteString.EMPTY;
        if (!out.isCancelled()) {
            out.onCompleted();
        }
        end();
    }

    private void send(final ProcessingResponse r) {
        if (phase != Phase.CLOSED && !out.isCancelled()) {
            out.onNext(r);
        }
    }

    private void cancelDeadline() {
        if (deadline != null) {
            deadline.cancel(false);
        }
    }

    private void end() {
        cancelDeadline();
        if (!ended) {
            ended = true;
            onEnd.run();
        }
    }

    /** The gateway cancelled the stream (gRPC's cancel handler). */
    synchronized void cancelled() {
        phase = Phase.CLOSED;
        body = ByteString.EMPTY;
        end();
    }

    @Override
    public synchronized void onError(final Throwable t) {
        // Envoy went away or cancelled the stream: drop what was read; a pick still running is ignored.
        phase = Phase.CLOSED;
        body = ByteString.EMPTY;
        end();
    }

    @Override
    public synchronized void onCompleted() {
        if (phase != Phase.CLOSED) {
            if (phase != Phase.ANSWERED) {
                metrics.requests.labelValues("abandoned").inc();
            }
            phase = Phase.CLOSED;
            body = ByteString.EMPTY;
            out.onCompleted();
        }
        end();
    }
}
