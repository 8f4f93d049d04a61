package io.kvidx.epp;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.concurrent.atomic.LongAdder;

/**
 * Bearer-token authentication of the picker's ext_proc service: a stream whose initial metadata lacks
 * {@code authorization: Bearer <token>} (Envoy sends it with the ext_proc filter's {@code grpc_service.initial_metadata})
 * is closed at once with {@code UNAUTHENTICATED}, before any message is read, and counted. The token is the serving
 * layer's ({@link io.kvidx.serve.BearerAuth#readToken}), compared in constant time. gRPC health is a separate service
 * this interceptor is not put on (the kubelet's probes carry no secret).
 *
 * <p><b>Note:</b> thread safe.
 */
final class TokenInterceptor implements ServerInterceptor {
    private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization",
        Metadata.ASCII_STRING_MARSHALLER);

    private final byte[] expected;
    private final Runnable onRefused;
    private final LongAdder refused = new LongAdder();

    /**
     * @param token     the token (checked as the serving layer checks one).
     * @param onRefused told of each refused stream (the picker's metrics).
     */
    TokenInterceptor(final String token, final Runnable onRefused) {
        this.expected = io.kvidx.serve.BearerAuth.authorization(token).getBytes(StandardCharsets.US_ASCII);
        this.onRefused = onRefused;
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, A> call, final Metadata headers,
        final ServerCallHandler<Q, A> next) {
        final String given = headers.get(AUTHORIZATION);
        if (given == null || !MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.US_ASCII))) {
            refused.increment();
            onRefused.run();
            call.close(Status.UNAUTHENTICATED.withDescription("the picker needs 'authorization: Bearer <token>'"),
                new Metadata());
            return new ServerCall.Listener<>() {
            };
        }
        return next.startCall(call, headers);
    }

    /**
     * @return streams refused for a missing or wrong token.
     */
    long refused() {
        return refused.sum();
    }
}
