package io.kvidx.routing.yaml;

import java.nio.file.Path;
import java.util.Map;

/**
 * The parameters of one plugin definition in a YAML profile, as a {@link PreparerType} reads them. Every parameter
 * read is marked used; parameters never read are reported as unknown, so a typo fails at startup.
 *
 * <p>Getters throw {@link IllegalArgumentException} with a message naming the key when a value has the wrong type;
 * the loader reports it as a definition problem of the plugin.
 *
 * <p><b>Note:</b> not thread safe; used while the profile is built.
 */
public interface PluginParameters {
    /**
     * @param key  parameter name.
     * @param dflt value when absent.
     * @return the value as a string, or {@code dflt}.
     */
    String string(String key, String dflt);

    /**
     * @param key  parameter name.
     * @param dflt value when absent.
     * @return the integer value, or {@code dflt}.
     */
    int integer(String key, int dflt);

    /**
     * @param key  parameter name.
     * @param dflt value when absent.
     * @return the boolean value, or {@code dflt}.
     */
    boolean bool(String key, boolean dflt);

    /**
     * @param key parameter name.
     * @return the mapping's entries as strings, in file order (empty when absent).
     */
    Map<String, String> stringMap(String key);

    /**
     * @param key parameter name.
     * @return the value as a path, resolved against the YAML file's directory when it is relative and the document
     * was loaded from a file; null when absent.
     */
    Path path(String key);

    /**
     * @param value a path from the document (e.g. a value of {@link #stringMap}).
     * @return it resolved like {@link #path}.
     */
    Path resolve(String value);
}
