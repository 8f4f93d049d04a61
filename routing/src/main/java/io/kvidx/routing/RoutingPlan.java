package io.kvidx.routing;

/**
 * What a {@link Workflow} decided: one pod for single dispatch, or a prefill pod and a decode pod.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link RoutingContext} and overwritten by its next decision.
 */
public final class RoutingPlan {
    /** Slot value meaning "no pod": no candidate survived the filters. */
    public static final int NO_POD = -1;

    /**
     * The shape of a plan.
     */
    public enum Kind {
        /** One pod serves the whole request. */
        SINGLE,
        /** A prefill pod computes the prompt's KV cache; a decode pod generates. */
        PREFILL_DECODE
    }

    private Kind kind = Kind.SINGLE;
    private int prefillSlot = NO_POD;
    private int decodeSlot = NO_POD;
    private boolean fallback;

    void single(final int slot, final boolean fallback) {
        this.kind = Kind.SINGLE;
        this.prefillSlot = NO_POD;
        this.decodeSlot = slot;
        this.fallback = fallback;
    }

    void prefillDecode(final int prefill, final int decode, final boolean fallback) {
        this.kind = Kind.PREFILL_DECODE;
        this.prefillSlot = prefill;
        this.decodeSlot = decode;
        this.fallback = fallback;
    }

    /**
     * @return the plan's shape.
     */
    public Kind kind() {
        return kind;
    }

    /**
     * @return the pod that serves a single dispatch, or the decode pod; {@link #NO_POD} when none was found.
     */
    public int slot() {
        return decodeSlot;
    }

    /**
     * @return the prefill pod ({@link #NO_POD} for single dispatch or when none was found).
     */
    public int prefillSlot() {
        return prefillSlot;
    }

    /**
     * @return the decode pod (same as {@link #slot()}).
     */
    public int decodeSlot() {
        return decodeSlot;
    }

    /**
     * @return true when some selector had to use its fallback picker (index missing or stale).
     */
    public boolean isFallback() {
        return fallback;
    }

    /**
     * @return true when every stage found a pod.
     */
    public boolean isRoutable() {
        return decodeSlot != NO_POD && (kind == Kind.SINGLE || prefillSlot != NO_POD);
    }

    @Override
    public String toString() {
        return kind == Kind.SINGLE ? "single(" + decodeSlot + (fallback ? ", fallback)" : ")")
            : "prefill-decode(" + prefillSlot + " -> " + decodeSlot + (fallback ? ", fallback)" : ")");
    }
}
