package io.kvidx.epp;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The picker behind a bearer token: an ext_proc stream without {@code authorization: Bearer <token>} metadata, or with
 * another token, is closed {@code UNAUTHENTICATED} and counted; with it, the request is picked; gRPC health and the
 * metrics door's {@code /health} stay open to probes; the metrics door's {@code /metrics} needs the header. A token
 * lets the doors listen on an address other hosts reach without {@code --allow-remote}.
 */
@Timeout(60)
class EppTokenTest {
    private static final String TOKEN = "epp-token-0123456789abcdef";

    @TempDir
    Path dir;

    @Test
    void shouldPickOnlyForStreamsCarryingTheToken() throws Exception {
        final Path token = dir.resolve("token");
        Files.writeString(token, TOKEN + "\n");
        final EppConfig c = new EppConfig();
        c.dir = dir.resolve("no-index").toString();
        c.listen = "127.0.0.1:0";
        c.metrics = "127.0.0.1:0";
        c.tokenFile = token;
        c.podSpec("pod-a=http://10.0.0.1:8000");
        try (EppServer epp = EppServer.start(c)) {
            final ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", epp.port()).usePlaintext().build();
            try {
                for (final String given : new String[] {null, "Bearer wrong-token-0123456789"}) {
                    final Metadata md = new Metadata();
                    if (given != null) {
                        md.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), given);
                    }
                    final Envoy.Stream s = new Envoy.Stream(ClientInterceptors.intercept(ch,
                        MetadataUtils.newAttachHeadersInterceptor(md)));
                    s.send(Envoy.post("/v1/completions", BodySendMode.BUFFERED, null),
                        Envoy.body("{\"model\":\"m\",\"prompt\":[1,2,3]}", true));
                    final AssertionError failed = assertThrows(AssertionError.class, s::next, String.valueOf(given));
                    assertTrue(failed.getCause() instanceof StatusRuntimeException sre
                        && sre.getStatus().getCode() == Status.Code.UNAUTHENTICATED, String.valueOf(failed));
                }
                assertEquals(2, epp.tokens.refused());

                final Metadata md = new Metadata();
                md.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + TOKEN);
                final Envoy.Stream s = new Envoy.Stream(ClientInterceptors.intercept(ch,
                    MetadataUtils.newAttachHeadersInterceptor(md)));
                s.send(Envoy.post("/v1/completions", BodySendMode.BUFFERED, null),
                    Envoy.body("{\"model\":\"m\",\"prompt\":[1,2,3]}", true));
                final List<ProcessingResponse> rs = s.take(2);
                assertEquals("10.0.0.1:8000", EppTest.pickOf(rs.get(1), false));
                s.requests.onCompleted();

                assertEquals(io.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING, HealthGrpc
                    .newBlockingStub(ch).check(HealthCheckRequest.getDefaultInstance()).getStatus(),
                    "health needs no token");
            } finally {
                ch.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
            }
            try (HttpClient http = HttpClient.newHttpClient()) {
                final String base = "http://127.0.0.1:" + epp.metricsPort();
                assertEquals(401, http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode());
                final HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics"))
                    .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(200, metrics.statusCode());
                assertTrue(metrics.body().contains("kvidx_epp_requests_total{outcome=\"unauthorized\"} 2.0"),
                    metrics.body());
                assertTrue(http.send(HttpRequest.newBuilder(URI.create(base + "/health")).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() != 401, "/health is open");
            }
        }
        final EppConfig remote = new EppConfig();
        remote.listen = "0.0.0.0:9002";
        remote.metrics = "off";
        assertThrows(IllegalArgumentException.class, remote::validate, "remote without a token or --allow-remote");
        remote.tokenFile = token;
        remote.validate();
    }
}
