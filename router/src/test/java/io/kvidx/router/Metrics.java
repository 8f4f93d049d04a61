package io.kvidx.router;

/**
 * Reads samples from a Prometheus text page, for assertions: the sum of a metric's samples whose labels include the
 * given pairs.
 */
final class Metrics {
    private Metrics() {
    }

    /**
     * @param page   the text exposition format.
     * @param name   the sample name (with {@code _total} for a counter).
     * @param labels pairs {@code key, value} every summed sample must carry.
     * @return the sum, or 0 when no sample matches.
     */
    static double value(final String page, final String name, final String... labels) {
        double sum = 0;
        for (final String line : page.split("\n")) {
            if (line.startsWith("#") || !line.startsWith(name)) {
                continue;
            }
            final int at = name.length();
            if (at >= line.length() || (line.charAt(at) != '{' && line.charAt(at) != ' ')) {
                continue;
            }
            final int close = line.charAt(at) == '{' ? line.indexOf('}', at) : at - 1;
            final String labelText = line.charAt(at) == '{' ? line.substring(at + 1, close) : "";
            boolean all = true;
            for (int i = 0; i < labels.length; i += 2) {
                all &= labelText.contains(labels[i] + "=\"" + labels[i + 1] + "\"");
            }
            if (all) {
                final String[] rest = line.substring(close + 1).trim().split(" ");
                sum += Double.parseDouble(rest[0]);
            }
        }
        return sum;
    }
}
