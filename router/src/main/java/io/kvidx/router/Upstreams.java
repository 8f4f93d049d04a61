package io.kvidx.router;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.FastThreadLocal;

import java.net.URI;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * Connections to the pods, kept alive and reused: each event loop keeps its own idle connections per pod URL
 * (so a request's client and pod connections live on one thread and nothing is shared between loops), at most
 * {@link #MAX_IDLE_PER_POD} each. A connection goes back only after a whole answer was read from it on a keep-alive
 * exchange; anything else closes it.
 *
 * <p><b>Note:</b> every method runs on the calling event loop, for that loop's connections.
 */
final class Upstreams {
    /** Idle connections kept per pod address and event loop. */
    static final int MAX_IDLE_PER_POD = 64;

    /** The exchange a pod connection currently serves (set while a request is in flight on it). */
    static final AttributeKey<UpstreamHandler.Listener> LISTENER = AttributeKey.valueOf("kvidx.router.call");

    /** Idle connections by pod URL (one {@link URI} per pod, from {@link PodBook}: its hash is computed once). */
    private final FastThreadLocal<Map<URI, ArrayDeque<Channel>>> idle = new FastThreadLocal<>() {
        @Override
        protected Map<URI, ArrayDeque<Channel>> initialValue() {
            return new HashMap<>();
        }
    };
    private final int connectMs;

    Upstreams(final int connectMs) {
        this.connectMs = connectMs;
    }

    static int port(final URI url) {
        return url.getPort() > 0 ? url.getPort() : 80;
    }

    /**
     * An idle connection to the pod if one is open, else a new one (connecting).
     *
     * @param loop the calling event loop.
     * @param url  the pod's base URL.
     * @return a future for the connection, on {@code loop}.
     */
    ChannelFuture acquire(final EventLoop loop, final URI url) {
        final ArrayDeque<Channel> q = idle.get().get(url);
        if (q != null) {
            Channel ch;
            while ((ch = q.pollLast()) != null) {
                if (ch.isActive()) {
                    return ch.newSucceededFuture();
                }
            }
        }
        return new Bootstrap().group(loop).channel(NioSocketChannel.class)
            .option(ChannelOption.TCP_NODELAY, true)
            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectMs)
            .handler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(final SocketChannel ch) {
                    ch.pipeline().addLast(new HttpClientCodec(4096, 65536, 65536)).addLast(UpstreamHandler.INSTANCE);
                }
            })
            .connect(url.getHost(), port(url));
    }

    /**
     * Keeps a connection whose last answer was read to its end for the next request to the same pod, or closes it
     * when the pool is full.
     *
     * @param url the pod's base URL.
     * @param ch  the connection.
     */
    void release(final URI url, final Channel ch) {
        ch.attr(LISTENER).set(null);
        if (!ch.isActive()) {
            return;
        }
        ch.config().setAutoRead(true);
        final ArrayDeque<Channel> q = idle.get().computeIfAbsent(url, k -> new ArrayDeque<>());
        if (q.size() >= MAX_IDLE_PER_POD) {
            ch.close();
        } else {
            q.addLast(ch);
        }
    }
}
