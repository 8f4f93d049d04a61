package io.kvidx.routing;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A typed key into a {@link RoutingContext}: plugins declare the slots they read and write, a {@link Profile}
 * checks when it is built that every read has an earlier writer, and each context holds one preallocated value
 * per slot (a mutable holder such as {@link BlockKeys}), so a decision allocates nothing.
 *
 * <p><b>Note:</b> immutable and thread safe; slots are created once, at class initialisation or profile build.
 *
 * @param <T> the value type held in the context.
 */
public final class Slot<T> {
    private static final AtomicInteger NEXT_ID = new AtomicInteger();

    private final int id;
    private final String name;
    private final Class<T> type;
    private final Supplier<? extends T> factory;

    private Slot(final String name, final Class<T> type, final Supplier<? extends T> factory) {
        this.id = NEXT_ID.getAndIncrement();
        this.name = Objects.requireNonNull(name, "name");
        this.type = Objects.requireNonNull(type, "type");
        this.factory = Objects.requireNonNull(factory, "factory");
    }

    /**
     * @param name    unique, human readable name used in validation errors.
     * @param type    value type.
     * @param factory creates the per-context value (called once per context).
     * @param <T>     value type.
     * @return a new slot.
     */
    public static <T> Slot<T> of(final String name, final Class<T> type, final Supplier<? extends T> factory) {
        return new Slot<>(name, type, factory);
    }

    /**
     * @return process-unique id, the index of the value in a context.
     */
    public int id() {
        return id;
    }

    /**
     * @return the slot's name.
     */
    public String name() {
        return name;
    }

    /**
     * @return the value type.
     */
    public Class<T> type() {
        return type;
    }

    static int upperBound() {
        return NEXT_ID.get();
    }

    T newValue() {
        return type.cast(factory.get());
    }

    @Override
    public String toString() {
        return name + "<" + type.getSimpleName() + ">";
    }
}
