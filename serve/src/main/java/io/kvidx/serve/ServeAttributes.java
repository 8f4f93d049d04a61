package io.kvidx.serve;

import io.netty.util.AttributeKey;

/**
 * The channel attributes the serving layer's handlers keep on a connection.
 */
final class ServeAttributes {
    /** Set on a connection {@link ConnectionLimit} closed at accept (it was never counted open). */
    static final AttributeKey<Boolean> REFUSED = AttributeKey.valueOf("kvidx.serve.refused");

    private ServeAttributes() {
    }
}
