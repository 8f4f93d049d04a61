package io.kvidx.bench.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.StreamedBodyResponse;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The floor under {@code bench epp}: an ext_proc server built as {@code kvidx epp} builds its own (grpc-netty-shaded,
 * a fixed pool of {@code max(2, CPUs)} threads running the calls' listeners, the same message limit) that answers
 * every request with the same pick at once: no parse, no keys, no index, no decision. What it costs is gRPC, HTTP/2 and
 * protobuf on loopback, for the same messages in the same order (BUFFERED: headers continue, then the pick on the
 * body; STREAMED: the pick on the headers once the body ended, then one answer per chunk; FULL_DUPLEX_STREAMED: the
 * pick on the headers, then the body echoed in mutations of at most {@link EnvoyRequest#EPP_STREAMED_CHUNK_BYTES}).
 * Run as its own process: {@code FloorPicker PORT [direct] [fixed-window]}; prints its port. Options, to show what
 * the picker's own server settings cost: {@code direct} runs the listeners on gRPC's event loops (no hand-off to the
 * pool); {@code fixed-window} sets a fixed 1 MiB HTTP/2 flow-control window, which turns off grpc-java's automatic
 * window tuning (on by default: a BDP ping to the client on data read while none is outstanding).
 *
 * <p><b>Note:</b> each stream's observer is called by gRPC one message at a time.
 */
public final class FloorPicker {
    private static final ProcessingResponse HEADERS_CONTINUE = ProcessingResponse.newBuilder()
        .setRequestHeaders(HeadersResponse.getDefaultInstance()).build();
    private static final ProcessingResponse BODY_CONTINUE = ProcessingResponse.newBuilder()
        .setRequestBody(BodyResponse.getDefaultInstance()).build();
    private static final String ENDPOINT = "10.1.0.1:8000";
    private static final CommonResponse PICK = CommonResponse.newBuilder().setHeaderMutation(HeaderMutation
        .newBuilder().addSetHeaders(HeaderValueOption.newBuilder().setHeader(HeaderValue.newBuilder()
            .setKey(EnvoyRequest.DESTINATION).setRawValue(ByteString.copyFromUtf8(ENDPOINT))))).setClearRouteCache(true)
        .build();
    private static final Struct LB = Struct.newBuilder().putFields("envoy.lb", Value.newBuilder().setStructValue(
        Struct.newBuilder().putFields(EnvoyRequest.DESTINATION, Value.newBuilder().setStringValue(ENDPOINT).build()))
        .build()).build();
    private static final ProcessingResponse PICK_ON_BODY = ProcessingResponse.newBuilder().setDynamicMetadata(LB)
        .setRequestBody(BodyResponse.newBuilder().setResponse(PICK)).build();
    private static final ProcessingResponse PICK_ON_HEADERS = ProcessingResponse.newBuilder().setDynamicMetadata(LB)
        .setRequestHeaders(HeadersResponse.newBuilder().setResponse(PICK)).build();

    private FloorPicker() {
    }

    /**
     * @param args the port (0: any), then options: {@code direct}, {@code fixed-window}.
     * @throws Exception when it cannot listen.
     */
    public static void main(final String[] args) throws Exception {
        final ExecutorService executor = Executors.newFixedThreadPool(Math.max(2,
            Runtime.getRuntime().availableProcessors()), r -> {
                final Thread t = new Thread(r, "floor-picker");
                t.setDaemon(true);
                return t;
            });
        final NettyServerBuilder b = NettyServerBuilder.forAddress(new InetSocketAddress(
            InetAddress.getLoopbackAddress(), Integer.parseInt(args[0]))).addService(new Service())
            .maxInboundMessageSize(8 * 1024 * 1024 + 64 * 1024);
        final java.util.List<String> options = java.util.List.of(args).subList(1, args.length);
        if (options.contains("direct")) {
            b.directExecutor();
        } else {
            b.executor(executor);
        }
        if (options.contains("fixed-window")) {
            b.flowControlWindow(1 << 20);
        }
        final Server server = b.build().start();
        System.out.println("floor picker listening on 127.0.0.1:" + server.getPort());
        System.out.flush();
        server.awaitTermination();
    }

    private static final class Service extends ExternalProcessorGrpc.ExternalProcessorImplBase {
        @Override
        public StreamObserver<ProcessingRequest> process(final StreamObserver<ProcessingResponse> out) {
            return new StreamObserver<>() {
                private BodySendMode mode = BodySendMode.BUFFERED;
                private int chunks;
                private ByteString body = ByteString.EMPTY;

                @Override
                public void onNext(final ProcessingRequest r) {
                    if (r.hasProtocolConfig()) {
                        mode = r.getProtocolConfig().getRequestBodyMode();
                    }
                    if (r.hasRequestHeaders()) {
                        if (mode == BodySendMode.BUFFERED) {
                            out.onNext(HEADERS_CONTINUE);
                        }
                        return;
                    }
                    if (!r.hasRequestBody()) {
                        return;
                    }
                    chunks++;
                    if (mode == BodySendMode.FULL_DUPLEX_STREAMED) {
                        body = body.concat(r.getRequestBody().getBody());
                    }
                    if (!r.getRequestBody().getEndOfStream()) {
                        return;
                    }
                    switch (mode) {
                        case BUFFERED -> out.onNext(PICK_ON_BODY);
                        case FULL_DUPLEX_STREAMED -> {
                            out.onNext(PICK_ON_HEADERS);
                            final int n = body.size();
                            for (int at = 0; at < n; at += EnvoyRequest.EPP_STREAMED_CHUNK_BYTES) {
                                final int end = Math.min(n, at + EnvoyRequest.EPP_STREAMED_CHUNK_BYTES);
                                out.onNext(ProcessingResponse.newBuilder().setRequestBody(BodyResponse.newBuilder()
                                    .setResponse(CommonResponse.newBuilder().setBodyMutation(BodyMutation.newBuilder()
                                        .setStreamedResponse(StreamedBodyResponse.newBuilder()
                                            .setBody(body.substring(at, end)).setEndOfStream(end == n))))).build());
                            }
                        }
                        default -> {
                            out.onNext(PICK_ON_HEADERS);
                            for (int i = 0; i < chunks; i++) {
                                out.onNext(BODY_CONTINUE);
                            }
                        }
                    }
                }

                @Override
                public void onError(final Throwable t) {
                    // the client went away
                }

                @Override
                public void onCompleted() {
                    out.onCompleted();
                }
            };
        }
    }
}
