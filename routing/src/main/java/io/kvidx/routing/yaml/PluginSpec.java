package io.kvidx.routing.yaml;

import io.kvidx.routing.Profile;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One plugin definition of a YAML profile: type, name and parameters; tracks which parameters were used, so that
 * {@link PluginFactory} can refuse unknown ones.
 *
 * <p><b>Note:</b> built and read by the thread that loads the YAML.
 */
final class PluginSpec implements PluginParameters {
    final String type;
    final String name;
    final Map<?, ?> params;
    final Path baseDir;
    final Set<String> used = new HashSet<>(Set.of("type", "name"));

    PluginSpec(final String type, final String name, final Map<?, ?> params, final Path baseDir) {
        this.type = type;
        this.name = name;
        this.params = params;
        this.baseDir = baseDir;
    }

    static PluginSpec of(final Path baseDir, final Object def, final Profile.Builder b) {
        if (def instanceof String s) {
            return new PluginSpec(s, s, Map.of(), baseDir);
        }
        if (!(def instanceof Map<?, ?> m) || m.get("type") == null) {
            b.definitionProblem(null, "a plugin must be a type name or a mapping with 'type': " + def);
            return null;
        }
        final String type = String.valueOf(m.get("type"));
        final Object name = m.get("name");
        return new PluginSpec(type, name == null ? type : String.valueOf(name), m, baseDir);
    }

    @Override
    public String string(final String key, final String dflt) {
        return str(key, dflt);
    }

    @Override
    public Map<String, String> stringMap(final String key) {
        final Object v = raw(key);
        if (v == null) {
            return Map.of();
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException("'" + key + "' must be a mapping, is '" + v + "'");
        }
        final Map<String, String> out = new LinkedHashMap<>();
        for (final Map.Entry<?, ?> e : m.entrySet()) {
            if (e.getValue() == null || e.getValue() instanceof Map || e.getValue() instanceof List) {
                throw new IllegalArgumentException("'" + key + "." + e.getKey() + "' must be a scalar, is '"
                    + e.getValue() + "'");
            }
            out.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
        }
        return out;
    }

    @Override
    public Path path(final String key) {
        final String v = str(key, null);
        return v == null ? null : resolve(v);
    }

    @Override
    public Path resolve(final String value) {
        final Path p = Path.of(value);
        return p.isAbsolute() || baseDir == null ? p : baseDir.resolve(p);
    }

    Object raw(final String key) {
        used.add(key);
        return params.get(key);
    }

    String str(final String key, final String dflt) {
        final Object v = raw(key);
        return v == null ? dflt : String.valueOf(v);
    }

    double dbl(final String key, final double dflt) {
        final Object v = raw(key);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        throw new IllegalArgumentException("'" + key + "' must be a number, is '" + v + "'");
    }

    @Override
    public int integer(final String key, final int dflt) {
        final Object v = raw(key);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Number n && n.doubleValue() == n.intValue()) {
            return n.intValue();
        }
        throw new IllegalArgumentException("'" + key + "' must be an integer, is '" + v + "'");
    }

    @Override
    public boolean bool(final String key, final boolean dflt) {
        final Object v = raw(key);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Boolean x) {
            return x;
        }
        throw new IllegalArgumentException("'" + key + "' must be true or false, is '" + v + "'");
    }

    <E extends Enum<E>> E enumOf(final String key, final Class<E> type, final E dflt) {
        final String v = str(key, null);
        if (v == null) {
            return dflt;
        }
        try {
            return Enum.valueOf(type, v.toUpperCase(Locale.ROOT).replace('-', '_'));
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("'" + key + "' must be one of "
                + java.util.Arrays.toString(type.getEnumConstants()).toLowerCase(Locale.ROOT).replace('_', '-')
                + ", is '" + v + "'");
        }
    }

    List<String> unused() {
        final List<String> u = new ArrayList<>();
        for (final Object k : params.keySet()) {
            if (!used.contains(String.valueOf(k))) {
                u.add(String.valueOf(k));
            }
        }
        return u;
    }
}
