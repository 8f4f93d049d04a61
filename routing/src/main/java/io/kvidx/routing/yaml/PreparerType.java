package io.kvidx.routing.yaml;

import io.kvidx.routing.Preparer;

/**
 * A preparer type that YAML profiles may name beyond the built-in ones, provided by an optional module (e.g.
 * kvidx-tokenize's {@code tokenize}) through {@link java.util.ServiceLoader} (a
 * {@code META-INF/services/io.kvidx.routing.yaml.PreparerType} entry) or given to
 * {@link YamlRouting.Environment#preparerType}. Built-in type names cannot be replaced.
 *
 * <p><b>Note:</b> implementations must be thread safe; one instance builds the plugins of every profile.
 */
public interface PreparerType {
    /**
     * @return the {@code type:} name in YAML.
     */
    String type();

    /**
     * Builds one preparer. Throws {@link IllegalArgumentException} (or {@link IllegalStateException}) with a clear
     * message for a bad definition; the loader reports it against the profile and plugin.
     *
     * @param name   the plugin's name.
     * @param params its parameters.
     * @return the preparer.
     */
    Preparer create(String name, PluginParameters params);
}
