package io.kvidx.daemon.config;

import io.aeron.ChannelUri;
import io.aeron.CommonContext;

import java.net.InetAddress;

/**
 * Whether an address or an Aeron channel a daemon uses is reachable from other hosts. Addresses are the serving
 * layer's {@link io.kvidx.serve.NetworkScope} (one rule for every door); this class adds Aeron's channels.
 */
final class NetworkScope {
    private NetworkScope() {
    }

    /**
     * @param host a host or address literal.
     * @return true for a loopback address or {@code localhost} ({@link io.kvidx.serve.NetworkScope#isLoopback}).
     */
    static boolean isLoopback(final String host) {
        return io.kvidx.serve.NetworkScope.isLoopback(host);
    }

    /**
     * @param hostPort {@code HOST:PORT}, IPv6 in brackets.
     * @return the host part ({@link io.kvidx.serve.NetworkScope#hostOf}).
     */
    static String hostOf(final String hostPort) {
        return io.kvidx.serve.NetworkScope.hostOf(hostPort);
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
