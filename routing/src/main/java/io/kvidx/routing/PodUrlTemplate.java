package io.kvidx.routing;

import io.kvidx.client.net.HostPatterns;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A router's or a picker's {@code pod-url-template} and the hosts it may reach ({@code pod-url-hosts}). The pod ids
 * pasted into the template come from the index, whose writers took them from the wire (a ZeroMQ topic on a bound
 * socket, an Aeron message, an API registration): whoever can publish an event chooses the text. PodIds' character set
 * keeps it out of the URL's syntax, and this class keeps it off hosts the operator did not mean: a URL the template
 * makes is used only when its host is allowed, else the pod has no URL and is not routed to or health-checked.
 *
 * <p>The allowed hosts are {@code pod-url-hosts} when given (CIDR blocks against IP literals, globs against names;
 * {@link HostPatterns}). Without them: the private and loopback address blocks ({@link #PRIVATE_BLOCKS}: where
 * Kubernetes pod IPs live, never the link-local block of cloud metadata servers), plus, when the template fixes text
 * around {@code {pod}} in its host (e.g. {@code http://{pod}.vllm:8000}), the names of that shape ({@code *.vllm}).
 * No name is resolved.
 *
 * <p><b>Note:</b> immutable; thread safe.
 */
public final class PodUrlTemplate {
    /** The address blocks a template URL may reach when {@code pod-url-hosts} is not given. */
    public static final List<String> PRIVATE_BLOCKS = List.of("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
        "100.64.0.0/10", "127.0.0.0/8", "fc00::/7", "::1/128");
    /** What the template holds in place of the pod id. */
    public static final String POD = "{pod}";

    private final String template;
    private final HostPatterns hosts;

    private PodUrlTemplate(final String template, final HostPatterns hosts) {
        this.template = template;
        this.hosts = hosts;
    }

    /**
     * @param template the template, holding {@code {pod}}; or null for none.
     * @param hosts    {@code pod-url-hosts} (empty for the default).
     * @return the template, or null when none was given.
     * @throws IllegalArgumentException when the template lacks {@code {pod}} or is no URL with a host, or a host
     *                                  pattern is malformed; the message names the setting.
     */
    public static PodUrlTemplate of(final String template, final List<String> hosts) {
        Objects.requireNonNull(hosts, "hosts");
        if (template == null) {
            if (!hosts.isEmpty()) {
                throw new IllegalArgumentException("pod-url-hosts is for pod-url-template, which is not set");
            }
            return null;
        }
        if (!template.contains(POD)) {
            throw new IllegalArgumentException("pod-url-template must contain {pod}: '" + template + "'");
        }
        final String host = hostOf(template.replace(POD, "kvidx-pod"));
        if (host == null) {
            throw new IllegalArgumentException("pod-url-template must be an http(s) URL with a host, e.g."
                + " http://{pod}:8000: '" + template + "'");
        }
        final List<String> patterns = new ArrayList<>(hosts);
        if (hosts.isEmpty()) {
            patterns.addAll(PRIVATE_BLOCKS);
            if (!"kvidx-pod".equals(host)) {
                // The operator fixed the host (no {pod} in it) or its domain around {pod}: names of that shape.
                patterns.add(host.replace("kvidx-pod", "*"));
            }
        }
        try {
            return new PodUrlTemplate(template, new HostPatterns(patterns));
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("pod-url-hosts: " + ex.getMessage(), ex);
        }
    }

    /**
     * @param pod a pod id (not a rank pod's: its pod's).
     * @return the pod's URL, or null when the template makes no URI of it or its host is not allowed.
     */
    public URI url(final String pod) {
        final String text = template.replace(POD, pod);
        try {
            final URI u = new URI(text);
            return u.getHost() != null && hosts.allowsHost(u.getHost()) ? u : null;
        } catch (final URISyntaxException ex) {
            return null;
        }
    }

    /**
     * @return the template as configured.
     */
    public String template() {
        return template;
    }

    /**
     * @return the host patterns in force (the configured ones, or the default's).
     */
    public List<String> hosts() {
        return hosts.patterns();
    }

    private static String hostOf(final String url) {
        try {
            final URI u = new URI(url);
            final String scheme = u.getScheme();
            return ("http".equalsIgnoreCase(scheme) || "https".equalsIgnoreCase(scheme)) ? u.getHost() : null;
        } catch (final URISyntaxException ex) {
            return null;
        }
    }
}
