package io.kvidx.routing;

import java.util.List;

/**
 * A profile (or workflow) that cannot work, found when it is built: the router refuses to start with it. Carries
 * every problem found; {@link #problem()}, {@link #plugin()} and {@link #slot()} describe the first.
 */
public final class ProfileValidationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Kinds of problems.
     */
    public enum Kind {
        /** A plugin reads a slot nobody writes. */
        MISSING_WRITER,
        /** A plugin reads a slot whose writer comes later in the order. */
        WRITER_AFTER_READER,
        /** Plugins depend on each other in a circle. */
        CYCLE,
        /** Two plugins write the same slot. */
        DUPLICATE_WRITER,
        /** A scorer weight is negative or not finite, or no weight is positive. */
        INVALID_WEIGHT,
        /** A plugin is placed in a stage it does not belong to. */
        WRONG_STAGE,
        /** The profile has no picker, or more than one. */
        PICKER_COUNT,
        /** Two plugins share a name. */
        DUPLICATE_NAME,
        /** A YAML profile names an unknown plugin type or gives a bad parameter. */
        BAD_DEFINITION
    }

    /**
     * One problem.
     *
     * @param kind    what is wrong.
     * @param profile profile name.
     * @param plugin  the plugin at fault (null when none).
     * @param slot    the slot involved (null when none).
     * @param detail  human readable explanation.
     */
    public record Problem(Kind kind, String profile, String plugin, String slot, String detail) {
        @Override
        public String toString() {
            return kind + " in profile '" + profile + "'" + (plugin != null ? ", plugin '" + plugin + "'" : "")
                + (slot != null ? ", slot '" + slot + "'" : "") + ": " + detail;
        }
    }

    private final transient List<Problem> problems;

    /**
     * @param problems what is wrong (at least one).
     */
    public ProfileValidationException(final List<Problem> problems) {
        super(message(problems));
        this.problems = List.copyOf(problems);
    }

    private static String message(final List<Problem> problems) {
        final StringBuilder sb = new StringBuilder("invalid routing profile (").append(problems.size())
            .append(problems.size() == 1 ? " problem)" : " problems)");
        for (final Problem p : problems) {
            sb.append("\n  ").append(p);
        }
        return sb.toString();
    }

    /**
     * @return every problem found.
     */
    public List<Problem> problems() {
        return problems;
    }

    /**
     * @return kind of the first problem.
     */
    public Kind problem() {
        return problems.get(0).kind();
    }

    /**
     * @return profile of the first problem.
     */
    public String profile() {
        return problems.get(0).profile();
    }

    /**
     * @return plugin of the first problem (may be null).
     */
    public String plugin() {
        return problems.get(0).plugin();
    }

    /**
     * @return slot of the first problem (may be null).
     */
    public String slot() {
        return problems.get(0).slot();
    }
}
