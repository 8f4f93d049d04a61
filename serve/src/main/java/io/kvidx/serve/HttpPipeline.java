package io.kvidx.serve;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.timeout.IdleStateHandler;

import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The HTTP/1.1 connection every kvidx HTTP server runs, in pipeline order:
 * <ol>
 *   <li>{@link ConnectionLimit}: at most {@link ServeContext#maxConnections} open; one more is closed at accept;</li>
 *   <li>TLS when the context has it ({@link ServerTls}; mutual: a client without a certificate the CA signed is
 *   refused in the handshake), and {@link TlsRefusals}, which closes and counts a connection whose TLS fails;</li>
 *   <li>{@link IdleStateHandler}: an event after {@link ServeContext#idleTimeoutS} seconds without a read or a write;
 *   {@link RequestSequencer} closes the connection on it when nothing is in flight (the one idle policy: a long
 *   answer or a slow pod never trips it, a forgotten keep-alive connection does);</li>
 *   <li>{@link RequestReadDeadline}'s clock: a request must arrive whole within {@link ServeContext#requestReadMs}
 *   of its first byte (a client trickling bytes, which the idle timeout never catches, is cut off);</li>
 *   <li>{@link HttpServerCodec} with the context's request line, header and chunk bounds;</li>
 *   <li>{@link BodyLimit}: whole requests of at most {@link ServeContext#maxBodyBytes}, a
 *   {@link BodyLimit.TooLarge} in place of a larger one; then the deadline's stop;</li>
 *   <li>{@link RequestSequencer}: one request at a time to the server's handler, answers in request order;</li>
 *   <li>{@link BearerAuth} when the context has one: a request without the token is answered 401;</li>
 *   <li>the server's handler, which receives {@link io.netty.handler.codec.http.FullHttpRequest}s and
 *   {@link BodyLimit.TooLarge}s and answers each with one response ({@link Responses}, or a streamed one ending in a
 *   {@link io.netty.handler.codec.http.LastHttpContent}).</li>
 * </ol>
 * One instance per server: its connection bound and deadline are shared by its connections, and it counts what they
 * refused, for the server's metrics.
 *
 * <p><b>Note:</b> thread safe (the event loops call {@link #accept} for their connections).
 */
public final class HttpPipeline implements Consumer<ChannelPipeline> {
    private final ServeContext context;
    private final Supplier<? extends ChannelHandler> handler;
    private final ConnectionLimit connections;
    private final RequestReadDeadline deadline;
    private final TlsRefusals tlsRefusals = new TlsRefusals();

    private HttpPipeline(final ServeContext context, final Supplier<? extends ChannelHandler> handler) {
        this.context = context.conclude();
        this.handler = handler;
        this.connections = new ConnectionLimit(context.maxConnections());
        this.deadline = new RequestReadDeadline(context.requestReadMs());
    }

    /**
     * @param context the server's bounds.
     * @param handler the server's handler for each new connection (a {@code @Sharable} one may be returned each
     *                time).
     * @return what adds an accepted connection's handlers ({@link NettyServer#start}).
     */
    public static HttpPipeline of(final ServeContext context, final Supplier<? extends ChannelHandler> handler) {
        return new HttpPipeline(context, handler);
    }

    @Override
    public void accept(final ChannelPipeline pipeline) {
        final ChannelHandler[] clock = deadline.handlers();
        pipeline.addLast(connections);
        if (context.tls() != null) {
            pipeline.addLast(context.tls().handler(pipeline.channel().alloc())).addLast(tlsRefusals);
        }
        pipeline.addLast(new IdleStateHandler(0, 0, context.idleTimeoutS(), TimeUnit.SECONDS))
            .addLast(clock[0])
            .addLast(new HttpServerCodec(context.maxInitialLineBytes(), context.maxHeaderBytes(),
                context.maxChunkBytes()))
            .addLast(new BodyLimit(context.maxBodyBytes()))
            .addLast(clock[1])
            .addLast(new RequestSequencer(context.maxPipelined()));
        if (context.auth() != null) {
            pipeline.addLast(context.auth());
        }
        pipeline.addLast(handler.get());
    }

    /**
     * @return connections closed because their TLS handshake or a record failed (no or a wrong client certificate,
     *     plain HTTP on a TLS door), since start.
     */
    public long tlsRefused() {
        return tlsRefusals.refused();
    }

    /**
     * @return connections open now.
     */
    public int connectionsOpen() {
        return connections.open();
    }

    /**
     * @return connections closed at accept because the bound was reached.
     */
    public long connectionsRefused() {
        return connections.refused();
    }

    /**
     * @return connections closed because a request did not arrive whole in time.
     */
    public long readDeadlinesExpired() {
        return deadline.expired();
    }

    /**
     * @return requests refused for a missing or wrong bearer token (0 without authentication).
     */
    public long unauthorized() {
        return context.auth() == null ? 0 : context.auth().refused();
    }
}
