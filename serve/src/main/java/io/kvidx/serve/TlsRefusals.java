package io.kvidx.serve;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.NotSslRecordException;

import javax.net.ssl.SSLException;
import java.util.concurrent.atomic.LongAdder;

/**
 * Right after a door's TLS handler: a connection whose handshake or records fail (no client certificate, one the CA did
 * not sign, plain HTTP on the TLS port, a torn record) is closed and counted here, instead of its exception reaching
 * the end of the pipeline and being logged with a stack trace per attempt.
 *
 * <p><b>Note:</b> {@code @Sharable}, one per server; the count is read by the metrics scrape.
 */
@ChannelHandler.Sharable
final class TlsRefusals extends ChannelInboundHandlerAdapter {
    private final LongAdder refused = new LongAdder();

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
        final Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        if (c instanceof SSLException || c instanceof NotSslRecordException) {
            refused.increment();
            ctx.close();
            return;
        }
        ctx.fireExceptionCaught(cause);
    }

    /**
     * @return connections closed for a failed TLS handshake or record since start.
     */
    long refused() {
        return refused.sum();
    }
}
