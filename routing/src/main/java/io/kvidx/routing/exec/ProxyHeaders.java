package io.kvidx.routing.exec;

/**
 * Which headers a proxy passes on, in either direction: never the hop-by-hop ones (RFC 9110 7.6.1 and the usual
 * extras), nor those the Connection header names, nor Host, Content-Length and Expect, which each hop sets for
 * itself (a proxy answers a client's 100-continue itself). Names are compared in place, ASCII case-insensitively, on
 * any {@link CharSequence} (Netty's {@code AsciiString}s, {@code String}s): nothing is allocated per header.
 *
 * <p><b>Note:</b> stateless; thread safe.
 */
public final class ProxyHeaders {
    private static final String[] SKIPPED = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
        "te", "trailer", "transfer-encoding", "upgrade", "proxy-connection", "host", "content-length", "expect"};

    private ProxyHeaders() {
    }

    /**
     * @param name       a header's name.
     * @param connection the message's Connection header, or null.
     * @return true when the header is not passed on to the next hop.
     */
    public static boolean isHopByHop(final CharSequence name, final String connection) {
        for (final String h : SKIPPED) {
            if (equalsIgnoreCase(name, h)) {
                return true;
            }
        }
        return connection != null && namedBy(connection, name);
    }

    /**
     * @param a a name.
     * @param b a lower-case ASCII name.
     * @return whether they are the same name, ignoring ASCII case.
     */
    static boolean equalsIgnoreCase(final CharSequence a, final String b) {
        final int n = b.length();
        if (a.length() != n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = a.charAt(i);
            if (c >= 'A' && c <= 'Z') {
                c = (char) (c + ('a' - 'A'));
            }
            if (c != Character.toLowerCase(b.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /** Whether the Connection header's comma-separated tokens name {@code name}. */
    private static boolean namedBy(final String connection, final CharSequence name) {
        int start = 0;
        while (start <= connection.length()) {
            int end = connection.indexOf(',', start);
            if (end < 0) {
                end = connection.length();
            }
            int s = start;
            int e = end;
            while (s < e && connection.charAt(s) <= ' ') {
                s++;
            }
            while (e > s && connection.charAt(e - 1) <= ' ') {
                e--;
            }
            if (e - s == name.length() && equalsIgnoreCase(name, connection.substring(s, e))) {
                return true;
            }
            start = end + 1;
        }
        return false;
    }
}
