package io.kvidx.daemon.ingest.zmq;

import java.util.Arrays;

/**
 * The publishers' subscriptions by publisher index, as the ZeroMQ ingest thread last set them: the replay thread
 * looks a request's publisher up here, so that publishers added or removed at runtime ({@code POST /register})
 * reach it without a restart. A removed publisher's index holds null until a new publisher takes it.
 *
 * <p><b>Note:</b> written by the ingest thread only (copy on write, published by a volatile store before any
 * replay request names the index); read by the replay thread.
 */
final class PublisherConfigs {
    private volatile ZmqEndpoint[] configs = new ZmqEndpoint[0];

    void set(final int index, final ZmqEndpoint config) {
        final ZmqEndpoint[] c = Arrays.copyOf(configs, Math.max(configs.length, index + 1));
        c[index] = config;
        configs = c;
    }

    ZmqEndpoint get(final int index) {
        final ZmqEndpoint[] c = configs;
        return index < c.length ? c[index] : null;
    }
}
