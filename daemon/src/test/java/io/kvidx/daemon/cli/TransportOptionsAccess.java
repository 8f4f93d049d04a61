package io.kvidx.daemon.cli;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;

/** Test access to the CLI's parsing of {@code --zmq} for other packages. */
public final class TransportOptionsAccess {
    private TransportOptionsAccess() {
    }

    /**
     * @param spec {@code POD[@MODEL]=ENDPOINT}.
     * @return the subscription, as {@code --zmq} parses it.
     */
    public static ZmqEndpoint parseZmq(final String spec) {
        return TransportOptions.parseZmq(spec);
    }
}
