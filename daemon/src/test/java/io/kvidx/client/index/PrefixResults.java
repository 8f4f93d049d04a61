package io.kvidx.client.index;

/** Test access to a {@link PrefixResult}'s fields for the daemon's tests (same package on the class path). */
public final class PrefixResults {
    private PrefixResults() {
    }

    /**
     * Sets the pod table version an answer says it saw: what a search reads when the writer changed the pod table
     * between its reads of the bits and its load of the version (the reader thread preempted there).
     *
     * @param result  an answer.
     * @param version the version.
     */
    public static void podTableVersion(final PrefixResult result, final long version) {
        result.podTableVersion = version;
    }
}
