package io.kvidx.serve;

import java.net.InetAddress;

/**
 * Whether an address a server listens on is reachable from other hosts: loopback addresses ({@code 127.0.0.0/8},
 * {@code ::1}, {@code localhost}) are not; wildcards ({@code 0.0.0.0}, {@code ::}, {@code *}), other addresses and
 * host names are. No DNS lookup is made (a host name other than {@code localhost} counts as remote). Every kvidx door
 * that refuses a non-loopback address without an explicit flag asks here.
 */
public final class NetworkScope {
    private NetworkScope() {
    }

    /**
     * @param host a host or address literal, IPv6 possibly in brackets, possibly with a {@code /prefix}.
     * @return true for a loopback address or {@code localhost}.
     */
    public static boolean isLoopback(final String host) {
        if (host == null) {
            return false;
        }
        String h = host.strip();
        final int slash = h.indexOf('/');
        if (slash >= 0) {
            h = h.substring(0, slash);
        }
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        if ("localhost".equalsIgnoreCase(h)) {
            return true;
        }
        try {
            return InetAddress.ofLiteral(h).isLoopbackAddress();
        } catch (final IllegalArgumentException ex) {
            return false; // a host name, or a wildcard such as '*'
        }
    }

    /**
     * @param hostPort {@code HOST:PORT}, IPv6 in brackets.
     * @return the host part.
     */
    public static String hostOf(final String hostPort) {
        final int colon = hostPort.lastIndexOf(':');
        final String host = colon < 0 ? hostPort : hostPort.substring(0, colon);
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }
}
