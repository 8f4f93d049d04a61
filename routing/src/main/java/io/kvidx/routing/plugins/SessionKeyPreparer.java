package io.kvidx.routing.plugins;

import io.kvidx.routing.LongValue;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Set;

/**
 * Hashes the session id from a request header into {@link Slots#SESSION_KEY} (absent when the header is missing
 * or empty). Reads {@link Slots#REQUEST}.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class SessionKeyPreparer implements Preparer {
    /** Default header carrying the session id. */
    public static final String HEADER_DEFAULT = "x-session-id";

    private final String name;
    private final String header;

    /**
     * @param name   plugin name.
     * @param header header name (case-insensitive).
     */
    public SessionKeyPreparer(final String name, final String header) {
        this.name = name;
        this.header = header == null ? HEADER_DEFAULT : header;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.REQUEST);
    }

    @Override
    public Set<Slot<?>> writes() {
        return Set.of(Slots.SESSION_KEY);
    }

    @Override
    public void prepare(final RoutingContext ctx) {
        final String value = ctx.get(Slots.REQUEST).header(header);
        final LongValue key = ctx.get(Slots.SESSION_KEY);
        if (value == null || value.isEmpty()) {
            key.clear();
        } else {
            key.set(RoutingContext.hash(value));
        }
    }
}
