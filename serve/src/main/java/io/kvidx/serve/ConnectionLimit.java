package io.kvidx.serve;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A server's bound on open connections ({@link ServeContext#maxConnections}): a connection accepted beyond it is
 * closed at once, before anything is read from it, and counted ({@link #refused()}). The first handler of every
 * connection; one instance per server, shared by its connections.
 *
 * <p><b>Note:</b> thread safe (the event loops of one server share it).
 */
@ChannelHandler.Sharable
public final class ConnectionLimit extends ChannelInboundHandlerAdapter {
    private final int max;
    private final AtomicInteger open = new AtomicInteger();
    private final LongAdder refused = new LongAdder();

    /**
     * @param max connections open at once.
     */
    public ConnectionLimit(final int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max connections must be positive: " + max);
        }
        this.max = max;
    }

    @Override
    public void channelActive(final ChannelHandlerContext ctx) throws Exception {
        if (open.incrementAndGet() > max) {
            open.decrementAndGet();
            refused.increment();
            ctx.channel().attr(ServeAttributes.REFUSED).set(Boolean.TRUE);
            ctx.close();
            return;
        }
        super.channelActive(ctx);
    }

    @Override
    public void channelInactive(final ChannelHandlerContext ctx) throws Exception {
        if (ctx.channel().attr(ServeAttributes.REFUSED).get() == null) {
            open.decrementAndGet();
        }
        super.channelInactive(ctx);
    }

    /**
     * @return connections open now.
     */
    public int open() {
        return open.get();
    }

    /**
     * @return connections closed at accept because {@code max} were open.
     */
    public long refused() {
        return refused.sum();
    }
}
