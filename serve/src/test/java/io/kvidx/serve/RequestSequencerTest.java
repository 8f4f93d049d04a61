package io.kvidx.serve;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.buffer.Unpooled;
import io.netty.handler.timeout.IdleStateEvent;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sequencer hands a handler one request at a time and the next only once the answer to the current one was
 * written to its end, so pipelined requests are answered in order whatever thread completes an answer.
 */
class RequestSequencerTest {
    /** Records the requests it got, answers only when told. */
    private static final class Recorder extends ChannelInboundHandlerAdapter {
        final List<String> got = new ArrayList<>();
        ChannelHandlerContext ctx;

        @Override
        public void handlerAdded(final ChannelHandlerContext context) {
            this.ctx = context;
        }

        @Override
        public void channelRead(final ChannelHandlerContext context, final Object msg) {
            got.add(msg instanceof FullHttpRequest r ? r.uri() : msg.toString());
            io.netty.util.ReferenceCountUtil.release(msg);
        }

        void answerWhole() {
            Responses.json(ctx, true, 200, g -> {
                g.writeStartObject();
                g.writeEndObject();
            });
        }
    }

    private static FullHttpRequest get(final String uri) {
        return new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, uri);
    }

    @Test
    void shouldHandOnTheNextRequestOnlyAfterTheAnswerEnded() {
        final Recorder app = new Recorder();
        final EmbeddedChannel ch = new EmbeddedChannel(new RequestSequencer(16), app);
        ch.writeInbound(get("/a"), get("/b"), new BodyLimit.TooLarge(10), get("/c"));
        assertEquals(List.of("/a"), app.got, "one request at a time");

        // A streamed answer: its head and a chunk do not end it.
        app.ctx.write(new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK));
        app.ctx.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(new byte[] {1})));
        ch.runPendingTasks();
        assertEquals(List.of("/a"), app.got);
        app.ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        ch.runPendingTasks();
        assertEquals(List.of("/a", "/b"), app.got);

        app.answerWhole();
        ch.runPendingTasks();
        assertEquals(3, app.got.size());
        assertTrue(app.got.get(2).contains("TooLarge"), "a refused body waits its turn: " + app.got);
        app.answerWhole();
        ch.runPendingTasks();
        assertEquals("/c", app.got.get(3));
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldStopReadingWhileTooManyRequestsWaitAndReadAgainOnceTheyDrain() {
        final Recorder app = new Recorder();
        final EmbeddedChannel ch = new EmbeddedChannel(new RequestSequencer(2), app);
        ch.writeInbound(get("/a"), get("/b"));
        assertTrue(ch.config().isAutoRead());
        ch.writeInbound(get("/c"));
        assertFalse(ch.config().isAutoRead(), "two wait: reading stops");
        app.answerWhole();
        ch.runPendingTasks();
        assertTrue(ch.config().isAutoRead(), "one waits again: reading goes on");
        assertEquals(List.of("/a", "/b"), app.got);
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldCloseAnIdleConnectionOnlyWithNothingInFlight() {
        final Recorder app = new Recorder();
        final EmbeddedChannel ch = new EmbeddedChannel(new RequestSequencer(16), app);
        ch.writeInbound(get("/a"));
        ch.pipeline().fireUserEventTriggered(IdleStateEvent.ALL_IDLE_STATE_EVENT);
        assertTrue(ch.isActive(), "an answer is being prepared: not idle");
        app.answerWhole();
        ch.runPendingTasks();
        ch.pipeline().fireUserEventTriggered(IdleStateEvent.ALL_IDLE_STATE_EVENT);
        assertFalse(ch.isActive(), "nothing in flight: closed");
        ch.finishAndReleaseAll();
    }
}
