package io.kvidx.daemon.config;

/**
 * A configuration value out of its accepted range, naming the YAML key it belongs to; the command line translates
 * the key to its option ({@link DaemonSettings#optionOf(String)}) when the value came from there.
 */
public final class ConfigException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** The YAML key (dotted for nested keys, e.g. {@code aeron.termLength}). */
    private final String key;
    /** What is wrong and what is accepted, e.g. {@code "must be in [1, 64]: 0"}. */
    private final String problem;

    /**
     * @param key     YAML key of the setting.
     * @param problem what is wrong and the accepted range, starting with a verb ({@code "must be ..."}).
     */
    public ConfigException(final String key, final String problem) {
        super(key + " " + problem);
        this.key = key;
        this.problem = problem;
    }

    /**
     * @return the YAML key of the setting.
     */
    public String key() {
        return key;
    }

    /**
     * @return what is wrong and what is accepted, without the key.
     */
    public String problem() {
        return problem;
    }

    /**
     * @param key   YAML key.
     * @param value value.
     * @param min   smallest accepted.
     * @param max   largest accepted.
     * @return the value.
     * @throws ConfigException when out of range.
     */
    static long range(final String key, final long value, final long min, final long max) {
        if (value < min || value > max) {
            throw new ConfigException(key, "must be in [" + min + ", " + max + "]: " + value);
        }
        return value;
    }

    /**
     * @param key   YAML key.
     * @param value value.
     * @param min   smallest accepted (a power of two).
     * @param max   largest accepted (a power of two).
     * @return the value.
     * @throws ConfigException when not a power of two in range.
     */
    static long powerOfTwo(final String key, final long value, final long min, final long max) {
        if (Long.bitCount(value) != 1 || value < min || value > max) {
            throw new ConfigException(key, "must be a power of two in [" + min + ", " + max + "]: " + value);
        }
        return value;
    }
}
