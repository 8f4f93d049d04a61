package io.kvidx.client.net;

import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Locale;

/**
 * A host allow-list: the hosts a daemon's API registration may name in its endpoints ({@code httpRegisterHosts}), the
 * hosts a router or a picker may reach through {@code pod-url-template} ({@code pod-url-hosts}). CIDR blocks
 * ({@code 10.0.0.0/8}, {@code fd00::/8}) matched against an endpoint whose host is an IP literal, and host-name globs
 * ({@code *.vllm.svc.cluster.local}, {@code *} any run of characters, {@code ?} one) matched against its host as
 * written. No name is resolved here: a name matches only a glob, an address only a CIDR block or an exact glob. An
 * empty list allows every host (the registrations' default, as Dynamo's indexer does).
 *
 * <p><b>Note:</b> immutable; thread safe.
 */
public final class HostPatterns {
    private final List<String> patterns;
    private final byte[][] networks;
    private final int[] prefixes;

    /**
     * @param patterns CIDR blocks and host globs.
     * @throws IllegalArgumentException naming a pattern that is empty or a malformed CIDR block.
     */
    public HostPatterns(final List<String> patterns) {
        this.patterns = List.copyOf(patterns);
        this.networks = new byte[patterns.size()][];
        this.prefixes = new int[patterns.size()];
        for (int i = 0; i < patterns.size(); i++) {
            final String p = patterns.get(i);
            if (p == null || p.isBlank()) {
                throw new IllegalArgumentException("an empty host pattern matches nothing");
            }
            final int slash = p.indexOf('/');
            if (slash >= 0) {
                final byte[] net = literal(p.substring(0, slash));
                final int bits;
                try {
                    bits = Integer.parseInt(p.substring(slash + 1));
                } catch (final NumberFormatException ex) {
                    throw new IllegalArgumentException("'" + p + "' is not a CIDR block (prefix length)");
                }
                if (net == null || bits < 0 || bits > net.length * 8) {
                    throw new IllegalArgumentException("'" + p + "' is not a CIDR block");
                }
                networks[i] = net;
                prefixes[i] = bits;
            }
        }
    }

    /**
     * @return whether every host is allowed (no pattern).
     */
    public boolean allowsAll() {
        return patterns.isEmpty();
    }

    /**
     * @param endpoint a ZeroMQ endpoint or a URL ({@code tcp://HOST:PORT}, {@code http://HOST:PORT/...};
     *                 {@code ipc://} has no host and is always allowed: it is local).
     * @return whether its host is allowed (never a URI without a host).
     */
    public boolean allows(final String endpoint) {
        if (patterns.isEmpty() || endpoint.startsWith("ipc://")) {
            return true;
        }
        return allowsHost(hostOf(endpoint));
    }

    /**
     * @param host a host as a URI writes it (an IPv6 literal with or without its brackets), or null.
     * @return whether it is allowed (never a null or empty host unless the list is empty).
     */
    public boolean allowsHost(final String host) {
        if (patterns.isEmpty()) {
            return true;
        }
        if (host == null || host.isEmpty()) {
            return false;
        }
        final String bare = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        final byte[] address = literal(bare);
        for (int i = 0; i < patterns.size(); i++) {
            if (networks[i] != null) {
                if (address != null && address.length == networks[i].length && within(address, networks[i],
                    prefixes[i])) {
                    return true;
                }
            } else if (glob(patterns.get(i).toLowerCase(Locale.ROOT), bare.toLowerCase(Locale.ROOT))) {
                return true;
            }
        }
        return false;
    }

    /**
     * @return the patterns, as given.
     */
    public List<String> patterns() {
        return patterns;
    }

    /**
     * Glob matching: {@code *} matches any run of characters (none included), {@code ?} one character; every other
     * character matches itself. The one glob of kvidx's allow-lists (pod ids, hosts).
     *
     * @param pattern a glob or an exact text.
     * @param text    the text.
     * @return true when the pattern matches the whole text.
     */
    public static boolean glob(final String pattern, final String text) {
        int p = 0;
        int t = 0;
        int star = -1;
        int resume = 0;
        while (t < text.length()) {
            if (p < pattern.length() && (pattern.charAt(p) == '?' || pattern.charAt(p) == text.charAt(t))
                && pattern.charAt(p) != '*') {
                p++;
                t++;
            } else if (p < pattern.length() && pattern.charAt(p) == '*') {
                star = p++;
                resume = t;
            } else if (star >= 0) {
                p = star + 1;
                t = ++resume;
            } else {
                return false;
            }
        }
        while (p < pattern.length() && pattern.charAt(p) == '*') {
            p++;
        }
        return p == pattern.length();
    }

    private static String hostOf(final String endpoint) {
        try {
            final String host = URI.create(endpoint).getHost();
            return host;
        } catch (final IllegalArgumentException ex) {
            return null;
        }
    }

    /** The address of an IPv4 or IPv6 literal, or null for a host name (never resolved). */
    private static byte[] literal(final String host) {
        final boolean v4 = !host.isEmpty() && host.chars().allMatch(c -> c == '.' || (c >= '0' && c <= '9'));
        final boolean v6 = host.indexOf(':') >= 0 && host.chars().allMatch(c -> c == ':' || c == '.'
            || Character.digit(c, 16) >= 0);
        if (!v4 && !v6) {
            return null;
        }
        try {
            return InetAddress.getByName(host).getAddress(); // a literal: parsed, not looked up
        } catch (final UnknownHostException ex) {
            return null;
        }
    }

    private static boolean within(final byte[] address, final byte[] network, final int bits) {
        for (int b = 0; b < bits; b++) {
            final int mask = 0x80 >>> (b & 7);
            if ((address[b >>> 3] & mask) != (network[b >>> 3] & mask)) {
                return false;
            }
        }
        return true;
    }
}
