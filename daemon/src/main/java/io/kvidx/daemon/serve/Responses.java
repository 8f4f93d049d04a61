package io.kvidx.daemon.serve;

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
 * Writes the API's responses: a JSON body produced by jackson-core's generator straight into a pooled buffer, the
 * content length set, the connection kept alive when the client asked for it.
 */
final class Responses {
    private Responses() {
    }

    /** Writes a JSON body. */
    @FunctionalInterface
    interface Json {
        /**
         * @param out the generator.
         * @throws IOException when writing fails.
         */
        void write(JsonGenerator out) throws IOException;
    }

    static void json(final ChannelHandlerContext ctx, final boolean keepAlive, final int status, final Json body) {
        final ByteBuf buf = ctx.alloc().buffer();
        try (JsonGenerator g = RequestBody.FACTORY.createGenerator((OutputStream) new ByteBufOutputStream(buf))) {
            body.write(g);
        } catch (final IOException | RuntimeException ex) {
            buf.release();
            throw ex instanceof RuntimeException r ? r : new IllegalStateException(ex);
        }
        send(ctx, keepAlive, status, buf, HttpHeaderValues.APPLICATION_JSON);
    }

    static void error(final ChannelHandlerContext ctx, final boolean keepAlive, final ApiException ex) {
        json(ctx, keepAlive, ex.status(), g -> {
            g.writeStartObject();
            g.writeStringField("error", ex.getMessage());
            g.writeStringField("code", ex.code());
            g.writeEndObject();
        });
    }

    static void send(final ChannelHandlerContext ctx, final boolean keepAlive, final int status, final ByteBuf body,
        final CharSequence contentType) {
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
            HttpResponseStatus.valueOf(status), body);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        HttpUtil.setContentLength(response, body.readableBytes());
        HttpUtil.setKeepAlive(response, keepAlive);
        if (keepAlive) {
            ctx.writeAndFlush(response, ctx.voidPromise());
        } else {
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
