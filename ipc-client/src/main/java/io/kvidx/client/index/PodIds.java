package io.kvidx.client.index;

/**
 * What a pod id may be, wherever one enters kvidx (an API registration, the configuration, a ZeroMQ topic, an Aeron
 * message): one character set and one length bound, so that an id can be pasted into a URL template, a log line or
 * a metric label without escaping, and never collides with a data-parallel rank id.
 *
 * <ul>
 *   <li>An <em>instance id</em> (a pod id without rank suffix) is 1 or more of the ASCII characters
 *   {@value #CHARACTERS}: letters, digits, dot, underscore, hyphen, colon (llm-d names pods {@code <ip>:<port>},
 *   Kubernetes pod names are DNS labels, Dynamo's worker ids are numbers).</li>
 *   <li>A <em>pod id</em> is an instance id, optionally followed by {@code #<rank>}, a rank in
 *   1..{@link DataParallelRanks#MAX_RANK} without a leading zero ({@link DataParallelRanks}). {@code #} appears
 *   nowhere else: {@code "7#1"} is instance 7's rank 1, so no instance may be named {@code "7#1"}.</li>
 *   <li>A pod id, rank suffix included, is at most {@link #MAX_LENGTH} bytes: the pod table's bound
 *   ({@link IndexDescriptor#POD_ID_MAX_LENGTH}).</li>
 * </ul>
 *
 * <p><b>Note:</b> stateless; thread safe. {@link #isPodId(byte[], int, int)} allocates nothing (for the transports'
 * hot paths); the checks that explain a refusal allocate their message only when they refuse.
 */
public final class PodIds {
    /** The characters of an instance id, as documented (docs/service-api.md, "Pod ids"). */
    public static final String CHARACTERS = "A-Z a-z 0-9 . _ - :";
    /** Longest pod id in bytes (its characters are ASCII: in characters too), rank suffix included. */
    public static final int MAX_LENGTH = IndexDescriptor.POD_ID_MAX_LENGTH;

    private PodIds() {
    }

    /**
     * @param c a character (or a byte, as an unsigned value).
     * @return true when an instance id may contain it.
     */
    public static boolean isIdChar(final int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
            || c == '-' || c == ':';
    }

    /**
     * Allocation-free check of a pod id read from the wire (a topic, an Aeron message).
     *
     * @param bytes  the bytes.
     * @param offset where the id starts.
     * @param length its length in bytes.
     * @return true when the bytes are a valid pod id (an instance id, optionally with a {@code #<rank>} suffix).
     */
    public static boolean isPodId(final byte[] bytes, final int offset, final int length) {
        if (length <= 0 || length > MAX_LENGTH) {
            return false;
        }
        int end = offset + length;
        int hash = -1;
        for (int i = end - 1; i > offset && i >= end - 5; i--) {
            if (bytes[i] == DataParallelRanks.SEPARATOR) {
                hash = i;
                break;
            }
        }
        if (hash > 0) {
            // A rank suffix: 1..4 digits, no leading zero, at most MAX_RANK.
            if (hash == end - 1 || bytes[hash + 1] == '0') {
                return false;
            }
            int rank = 0;
            for (int i = hash + 1; i < end; i++) {
                final int d = bytes[i] - '0';
                if (d < 0 || d > 9) {
                    return false;
                }
                rank = rank * 10 + d;
            }
            if (rank > DataParallelRanks.MAX_RANK) {
                return false;
            }
            end = hash;
        }
        for (int i = offset; i < end; i++) {
            if (!isIdChar(bytes[i] & 0xFF)) {
                return false;
            }
        }
        return true;
    }

    /**
     * @param id a pod id (an instance id, optionally with a {@code #<rank>} suffix), e.g. from the configuration.
     * @return why it is refused, for a person, or null when it is valid.
     */
    public static String checkPodId(final String id) {
        if (id == null || id.isEmpty()) {
            return "a pod id must not be empty";
        }
        final int rank = DataParallelRanks.rankOf(id);
        final String why = check(rank == 0 ? id : DataParallelRanks.basePodId(id), "pod id", id);
        return why != null ? why : checkLength(id);
    }

    /**
     * @param id an instance id (no rank suffix: the rank is given apart, e.g. the API's {@code dp_rank}).
     * @return why it is refused, for a person, or null when it is valid.
     */
    public static String checkInstanceId(final String id) {
        if (id == null || id.isEmpty()) {
            return "an instance id must not be empty";
        }
        final String why = check(id, "instance id", id);
        return why != null ? why : checkLength(id);
    }

    private static String check(final String base, final String what, final String whole) {
        if (base.isEmpty()) {
            return what + " '" + printable(whole) + "' has no instance id before its rank suffix";
        }
        for (int i = 0; i < base.length(); i++) {
            final char c = base.charAt(i);
            if (c == DataParallelRanks.SEPARATOR) {
                return what + " '" + printable(whole) + "' contains '#', which separates a data-parallel rank from "
                    + "its instance ('7#1' is rank 1 of instance 7): give the rank apart (dp_rank), never in the id";
            }
            if (!isIdChar(c)) {
                return what + " '" + printable(whole) + "' contains " + describe(c) + "; pod ids are made of the "
                    + "ASCII characters " + CHARACTERS + " (docs/service-api.md, \"Pod ids\")";
            }
        }
        return null;
    }

    private static String checkLength(final String id) {
        // Every character is ASCII by now: characters are bytes.
        return id.length() > MAX_LENGTH ? "pod id '" + printable(id) + "' has " + id.length()
            + " bytes; the pod table holds at most " + MAX_LENGTH + " (a #<rank> suffix included)" : null;
    }

    private static String describe(final char c) {
        return c >= 0x20 && c < 0x7F ? "'" + c + "'" : String.format("U+%04X", (int) c);
    }

    /**
     * @param s untrusted text.
     * @return it, for a log line or an error message: at most 64 characters, anything outside printable ASCII as
     * {@code \\uXXXX}, longer text cut with {@code ...}.
     */
    public static String printable(final String s) {
        final StringBuilder b = new StringBuilder(Math.min(s.length(), 64) + 8);
        for (int i = 0; i < s.length() && i < 64; i++) {
            final char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7F && c != '\\') {
                b.append(c);
            } else {
                b.append(String.format("\\u%04x", (int) c));
            }
        }
        if (s.length() > 64) {
            b.append("...");
        }
        return b.toString();
    }
}
