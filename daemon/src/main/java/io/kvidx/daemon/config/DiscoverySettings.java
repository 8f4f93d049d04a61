package io.kvidx.daemon.config;

import io.kvidx.discovery.DiscoveryContext;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Pod discovery from the Kubernetes API server ({@code --discover} / {@code --discover-pool}, or the YAML's
 * {@code discovery:} section): what to watch ({@link DiscoveryContext}, whose defaults are discovery's own) and
 * which credentials to use (a kubeconfig file, or else the client's own search: {@code KUBECONFIG},
 * {@code ~/.kube/config}, then the pod's service account token and CA). Off by default.
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude()}.
 */
public final class DiscoverySettings {
    private DiscoveryContext context;
    private Path kubeconfig;

    /**
     * @param context what to discover, or null for no discovery.
     * @return this.
     */
    public DiscoverySettings context(final DiscoveryContext context) {
        this.context = context;
        return this;
    }

    /**
     * @return what to discover, or null when discovery is off.
     */
    public DiscoveryContext context() {
        return context;
    }

    /**
     * @param kubeconfig a kubeconfig file, or null for the client's own search.
     * @return this.
     */
    public DiscoverySettings kubeconfig(final Path kubeconfig) {
        this.kubeconfig = kubeconfig;
        return this;
    }

    /**
     * @return the kubeconfig file, or null.
     */
    public Path kubeconfig() {
        return kubeconfig;
    }

    /**
     * @throws ConfigException for a discovery that cannot work or a kubeconfig that cannot be read.
     */
    void conclude() {
        if (context != null) {
            try {
                context.conclude();
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException("discovery", ex.getMessage());
            }
        }
        if (kubeconfig != null && !Files.isReadable(kubeconfig)) {
            throw new ConfigException("kubeconfig", "cannot read " + kubeconfig);
        }
        if (kubeconfig != null && context == null) {
            throw new ConfigException("kubeconfig", "is only used by discovery (--discover or --discover-pool)");
        }
    }
}
