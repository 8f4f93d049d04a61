package io.kvidx.serve;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;

import java.io.IOException;
import java.io.OutputStream;

/**
 * Writes whole answers: a JSON body produced by jackson-core's generator straight into a pooled buffer, Prometheus
 * text, health, errors in the API's {@link ErrorShape}; the content length set, the connection kept alive when the
 * client asked for it and closed after the answer otherwise. Callable from any thread (Netty moves the write to the
 * connection's event loop).
 */
public final class Responses {
    /** The generator factory (no read constraints apply to writing). */
    public static final JsonFactory JSON = new JsonFactory();
    /** The Prometheus text exposition format's content type. */
    public static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private Responses() {
    }

    /** Writes a JSON body. */
    @FunctionalInterface
    public interface Json {
        /**
         * @param out the generator.
         * @throws IOException when writing fails.
         */
        void write(JsonGenerator out) throws IOException;
    }

    /** Writes a body to a stream (a Prometheus scrape). */
    @FunctionalInterface
    public interface Body {
        /**
         * @param out where to write.
         * @throws IOException when writing fails.
         */
        void write(OutputStream out) throws IOException;
    }

    /**
     * Answers with a JSON body. The body is built before a byte is sent: a failure leaves nothing written.
     *
     * @param ctx       the connection.
     * @param keepAlive keep the connection after the answer.
     * @param status    HTTP status.
     * @param body      writes the body.
     * @throws IllegalStateException when the body cannot be written (nothing was sent).
     */
    public static void json(final ChannelHandlerContext ctx, final boolean keepAlive, final int status,
        final Json body) {
        send(ctx, keepAlive, status, write(ctx, body), HttpHeaderValues.APPLICATION_JSON, null);
    }

    private static ByteBuf write(final ChannelHandlerContext ctx, final Json body) {
        final ByteBuf buf = ctx.alloc().buffer();
        try (JsonGenerator g = JSON.createGenerator((OutputStream) new ByteBufOutputStream(buf))) {
            body.write(g);
        } catch (final IOException | RuntimeException ex) {
            buf.release();
            throw ex instanceof RuntimeException r ? r : new IllegalStateException(ex);
        }
        return buf;
    }

    /**
     * Answers with an error.
     *
     * @param ctx       the connection.
     * @param keepAlive keep the connection after the answer.
     * @param shape     the API's error shape.
     * @param error     the error (its status is the answer's).
     */
    public static void error(final ChannelHandlerContext ctx, final boolean keepAlive, final ErrorShape shape,
        final HttpError error) {
        send(ctx, keepAlive, error.status(), write(ctx, g -> shape.write(g, error)), HttpHeaderValues.APPLICATION_JSON,
            error);
    }

    /**
     * Answers a health check: 200 when healthy, else 503, with {@code {"status": status, ...fields}}.
     *
     * @param ctx       the connection.
     * @param keepAlive keep the connection after the answer.
     * @param healthy   whether the server can do its work now.
     * @param status    the {@code status} field's value.
     * @param fields    writes the object's other fields.
     */
    public static void health(final ChannelHandlerContext ctx, final boolean keepAlive, final boolean healthy,
        final String status, final Json fields) {
        json(ctx, keepAlive, healthy ? 200 : 503, g -> {
            g.writeStartObject();
            g.writeStringField("status", status);
            fields.write(g);
            g.writeEndObject();
        });
    }

    /**
     * Answers with a Prometheus text exposition.
     *
     * @param ctx       the connection.
     * @param keepAlive keep the connection after the answer.
     * @param scrape    writes the exposition.
     * @throws IOException when the scrape fails (nothing was sent).
     */
    public static void prometheus(final ChannelHandlerContext ctx, final boolean keepAlive, final Body scrape)
        throws IOException {
        final ByteBuf buf = ctx.alloc().buffer();
        try (OutputStream out = new ByteBufOutputStream(buf)) {
            scrape.write(out);
        } catch (final IOException | RuntimeException ex) {
            buf.release();
            throw ex;
        }
        send(ctx, keepAlive, 200, buf, PROMETHEUS_TEXT);
    }

    /**
     * Answers with a body.
     *
     * @param ctx         the connection.
     * @param keepAlive   keep the connection after the answer.
     * @param status      HTTP status.
     * @param body        the body (released by the write).
     * @param contentType its content type.
     */
    public static void send(final ChannelHandlerContext ctx, final boolean keepAlive, final int status,
        final ByteBuf body, final CharSequence contentType) {
        send(ctx, keepAlive, status, body, contentType, null);
    }

    private static void send(final ChannelHandlerContext ctx, final boolean keepAlive, final int status,
        final ByteBuf body, final CharSequence contentType, final HttpError headersOf) {
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
            HttpResponseStatus.valueOf(status), body);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        if (headersOf != null) {
            headersOf.addHeaders(response.headers());
        }
        HttpUtil.setContentLength(response, body.readableBytes());
        HttpUtil.setKeepAlive(response, keepAlive);
        if (keepAlive) {
            ctx.writeAndFlush(response, ctx.voidPromise());
        } else {
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
