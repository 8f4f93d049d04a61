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
 *   <li>{@link IdleStateHandler}: an event after {@link ServeContext#idleTimeoutS} seconds without a read or a write;
 *   {@link RequestSequencer} closes the connection on it when nothing is in flight (the one idle policy: a long
 *   answer or a slow pod never trips it, a forgotten keep-alive connection does);</li>
 *   <li>{@link HttpServerCodec} with the context's request line, header and chunk bounds;</li>
 *   <li>{@link BodyLimit}: whole requests of at most {@link ServeContext#maxBodyBytes}, a
 *   {@link BodyLimit.TooLarge} in place of a larger one;</li>
 *   <li>{@link RequestSequencer}: one request at a time to the server's handler, answers in request order;</li>
 *   <li>the server's handler, which receives {@link io.netty.handler.codec.http.FullHttpRequest}s and
 *   {@link BodyLimit.TooLarge}s and answers each with one response ({@link Responses}, or a streamed one ending in a
 *   {@link io.netty.handler.codec.http.LastHttpContent}).</li>
 * </ol>
 */
public final class HttpPipeline {
    private HttpPipeline() {
    }

    /**
     * @param context the server's bounds.
     * @param handler the server's handler for each new connection (a {@code @Sharable} one may be returned each
     *                time).
     * @return what adds an accepted connection's handlers ({@link NettyServer#start}).
     */
    public static Consumer<ChannelPipeline> of(final ServeContext context,
        final Supplier<? extends ChannelHandler> handler) {
        return pipeline -> pipeline
            .addLast(new IdleStateHandler(0, 0, context.idleTimeoutS(), TimeUnit.SECONDS))
            .addLast(new HttpServerCodec(context.maxInitialLineBytes(), context.maxHeaderBytes(),
                context.maxChunkBytes()))
            .addLast(new BodyLimit(context.maxBodyBytes()))
            .addLast(new RequestSequencer(context.maxPipelined()))
            .addLast(handler.get());
    }
}
