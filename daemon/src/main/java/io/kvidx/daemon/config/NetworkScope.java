package io.kvidx.daemon.config;

import io.aeron.ChannelUri;
import io.aeron.CommonContext;

import java.net.InetAddress;

/**
 * Whether an address a daemon listens on is reachable from other hosts: loopback addresses ({@code 127.0.0.0/8},
 * {@code ::1}, {@code localhost}) are not; wildcards ({@code 0.0.0.0}, {@code ::}, {@code *}), other addresses and
 * host names are. No DNS lookup is made (a host name other than {@code localhost} counts as remote).
 */
final class NetworkScope {
    private NetworkScope() {
    }

    /**
     * @param host a host or address literal, IPv6 possibly in brackets, possibly with a {@code /prefix}.
     * @return true for a loopback address or {@code localhost}.
     */
    static boolean isLoopback(final String host) {
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
    static String hostOf(final String hostPort) {
        final int colon = hostPort.lastIndexOf(':');
        final String host = colon < 0 ? hostPort : hostPort.substring(0, colon);
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    /**
     * Why an Aeron channel reaches beyond this host, or null when it does not: IPC and spy channels never do; a UDP
     * channel does unless its endpoint (and its control address and interface, when set) are loopback.
     *
     * @param channel an Aeron channel URI.
     * @return the reason (names the address), or null when the channel is local.
     * @throws IllegalArgumentException when the channel is not a valid Aeron URI.
     */
    static String remoteReason(final String channel) {
        final ChannelUri uri = ChannelUri.parse(channel);
        if (!CommonContext.UDP_MEDIA.equals(uri.media()) || ChannelUri.SPY_QUALIFIER.equals(uri.prefix())) {
            return null;
        }
        final String endpoint = uri.get(CommonContext.ENDPOINT_PARAM_NAME);
        final String control = uri.get(CommonContext.MDC_CONTROL_PARAM_NAME);
        if (endpoint == null && control == null) {
            return "it names no endpoint";
        }
        for (final String address : new String[] {endpoint, control}) {
            if (address != null && !isLoopback(hostOf(address))) {
                return "it binds " + hostOf(address) + ", " + (isWildcard(hostOf(address)) ? "a wildcard"
                    : "not a loopback address");
            }
        }
        final String iface = uri.get(CommonContext.INTERFACE_PARAM_NAME);
        if (iface != null && !isLoopback(interfaceHost(iface))) {
            return "its interface " + iface + " is not a loopback address";
        }
        return null;
    }

    private static String interfaceHost(final String iface) {
        final String address = iface.indexOf('/') >= 0 ? iface.substring(0, iface.indexOf('/')) : iface;
        final boolean withPort = address.startsWith("[") || address.indexOf(':') == address.lastIndexOf(':');
        return withPort ? hostOf(address) : address;
    }

    private static boolean isWildcard(final String host) {
        if ("*".equals(host)) {
            return true;
        }
        try {
            return InetAddress.ofLiteral(host).isAnyLocalAddress();
        } catch (final IllegalArgumentException ex) {
            return false;
        }
    }
}
