package io.kvidx.epp;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Envoy's {@code ExternalProcessor} service: each {@code Process} stream gets a {@link PickStream}, refused at once
 * (503) beyond {@link EppLimits#maxStreams()} open streams.
 *
 * <p><b>Note:</b> thread safe.
 */
final class PickerService extends ExternalProcessorGrpc.ExternalProcessorImplBase {
    private final Picker picker;
    private final EppLimits limits;
    private final EppMetrics metrics;
    private final String sessionHeader;
    private final ScheduledExecutorService timer;
    private final AtomicInteger open = new AtomicInteger();

    PickerService(final Picker picker, final EppLimits limits, final EppMetrics metrics, final String sessionHeader,
        final ScheduledExecutorService timer) {
        this.picker = picker;
        this.limits = limits;
        this.metrics = metrics;
        this.sessionHeader = sessionHeader.toLowerCase(java.util.Locale.ROOT);
        this.timer = timer;
    }

    @Override
    public StreamObserver<ProcessingRequest> process(final StreamObserver<ProcessingResponse> responses) {
        final int now = open.incrementAndGet();
        metrics.streams.inc();
        final PickStream stream = new PickStream((ServerCallStreamObserver<ProcessingResponse>) responses, picker,
            limits, metrics, sessionHeader, timer, () -> {
                open.decrementAndGet();
                metrics.streams.dec();
            });
        // With a cancel handler a late answer to a cancelled stream is dropped by gRPC instead of throwing on the
        // thread that sends it (a tokenizing thread, the timer).
        ((ServerCallStreamObserver<ProcessingResponse>) responses).setOnCancelHandler(stream::cancelled);
        if (now > limits.maxStreams()) {
            stream.refuse();
        }
        return stream;
    }

    /**
     * @return streams open now.
     */
    int open() {
        return open.get();
    }
}
