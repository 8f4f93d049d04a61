package io.kvidx.routing;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A validated, immutable list of plugins for one selection pass: preparers, filters, weighted scorers, a picker
 * and a fallback picker (used while the index is missing or stale; default power-of-two choices).
 *
 * <p>{@link Builder#build()} checks the data flow and refuses a profile that cannot work, with a
 * {@link ProfileValidationException} naming the plugin and slot: every slot a plugin reads has a writer earlier
 * in the order (the request counts as the first writer of its input slots; of {@link Slots#TOKENS} only when no
 * preparer writes it, e.g. one that tokenizes the request's text, and the profile does not declare it), the plugins' read/write graph has no
 * cycle, no slot has two writers, every plugin sits in its own stage, names are unique, weights are finite and
 * non-negative with at least one positive, and there is exactly one picker.
 *
 * <p><b>Note:</b> immutable and thread safe once built.
 */
public final class Profile {
    /** The pseudo-writer of input slots in validation errors. */
    public static final String REQUEST_WRITER = "request";

    private final String name;
    private final Set<Slot<?>> inputs;
    private final List<Preparer> preparers;
    private final List<Filter> filters;
    private final List<Scorer> scorers;
    private final double[] weights;
    private final Picker picker;
    private final Picker fallback;
    private final boolean needsIndex;

    private Profile(final Builder b, final Picker fallback) {
        this.name = b.name;
        this.inputs = Collections.unmodifiableSet(b.effectiveInputs());
        this.preparers = List.copyOf(b.preparers);
        this.filters = List.copyOf(b.filters);
        this.scorers = List.copyOf(b.scorers);
        this.weights = new double[b.weights.size()];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = b.weights.get(i);
        }
        this.picker = b.pickers.get(0);
        this.fallback = fallback;
        boolean n = false;
        for (final RoutingPlugin p : plugins()) {
            n |= p.needsIndex();
        }
        this.needsIndex = n;
    }

    /**
     * @param name profile name.
     * @return a builder.
     */
    public static Builder builder(final String name) {
        return new Builder(name);
    }

    /**
     * @return the profile's name.
     */
    public String name() {
        return name;
    }

    /**
     * @return slots the request (or an enclosing workflow) supplies.
     */
    public Set<Slot<?>> inputs() {
        return inputs;
    }

    /**
     * @return preparers in order.
     */
    public List<Preparer> preparers() {
        return preparers;
    }

    /**
     * @return filters in order.
     */
    public List<Filter> filters() {
        return filters;
    }

    /**
     * @return scorers in order.
     */
    public List<Scorer> scorers() {
        return scorers;
    }

    /**
     * @param i scorer index.
     * @return its weight.
     */
    public double weight(final int i) {
        return weights[i];
    }

    /**
     * @return the picker.
     */
    public Picker picker() {
        return picker;
    }

    /**
     * @return the fallback picker.
     */
    public Picker fallback() {
        return fallback;
    }

    /**
     * @return true when some plugin needs the index (so the profile can fall back).
     */
    public boolean needsIndex() {
        return needsIndex;
    }

    /**
     * @return every plugin in execution order, then the fallback picker.
     */
    public List<RoutingPlugin> plugins() {
        final List<RoutingPlugin> all = new ArrayList<>();
        all.addAll(preparers);
        all.addAll(filters);
        all.addAll(scorers);
        all.add(picker);
        all.add(fallback);
        return all;
    }

    /**
     * @return every slot the profile's plugins read or write, and its inputs.
     */
    public Set<Slot<?>> slots() {
        final Set<Slot<?>> all = new LinkedHashSet<>(inputs);
        for (final RoutingPlugin p : plugins()) {
            all.addAll(p.reads());
            all.addAll(p.writes());
        }
        return all;
    }

    /**
     * @return slots written by the profile's plugins.
     */
    public Set<Slot<?>> written() {
        final Set<Slot<?>> all = new LinkedHashSet<>();
        for (final RoutingPlugin p : plugins()) {
            all.addAll(p.writes());
        }
        return all;
    }

    @Override
    public String toString() {
        final StringBuilder sb = new StringBuilder("profile ").append(name).append(": prepare=");
        preparers.forEach(p -> sb.append(p.name()).append(' '));
        sb.append("filter=");
        filters.forEach(p -> sb.append(p.name()).append(' '));
        sb.append("score=");
        for (int i = 0; i < scorers.size(); i++) {
            sb.append(scorers.get(i).name()).append('*').append(weights[i]).append(' ');
        }
        return sb.append("pick=").append(picker.name()).append(" fallback=").append(fallback.name()).toString();
    }

    /**
     * Collects plugins; {@link #build()} validates.
     */
    public static final class Builder {
        private final String name;
        private final Set<Slot<?>> inputs = new LinkedHashSet<>(List.of(Slots.TOKENS, Slots.REQUEST));
        private boolean tokensDeclared;
        private final List<Preparer> preparers = new ArrayList<>();
        private final List<Filter> filters = new ArrayList<>();
        private final List<Scorer> scorers = new ArrayList<>();
        private final List<Double> weights = new ArrayList<>();
        private final List<Picker> pickers = new ArrayList<>();
        private Picker fallback;
        private final List<ProfileValidationException.Problem> definitionProblems = new ArrayList<>();

        private Builder(final String name) {
            this.name = Objects.requireNonNull(name, "name");
        }

        /**
         * Declares slots the request supplies beyond {@link Slots#TOKENS} and {@link Slots#REQUEST} (e.g.
         * {@link Slots#BLOCK_KEYS} when routing by keys, {@link Slots#PREFILL_PICK} for a decode profile).
         *
         * @param slots input slots.
         * @return this.
         */
        public Builder input(final Slot<?>... slots) {
            inputs.addAll(List.of(slots));
            tokensDeclared |= List.of(slots).contains(Slots.TOKENS);
            return this;
        }

        /**
         * @param p a preparer.
         * @return this.
         */
        public Builder prepare(final Preparer p) {
            preparers.add(Objects.requireNonNull(p));
            return this;
        }

        /**
         * @param f a filter.
         * @return this.
         */
        public Builder filter(final Filter f) {
            filters.add(Objects.requireNonNull(f));
            return this;
        }

        /**
         * @param s      a scorer.
         * @param weight its weight (finite, >= 0).
         * @return this.
         */
        public Builder score(final Scorer s, final double weight) {
            scorers.add(Objects.requireNonNull(s));
            weights.add(weight);
            return this;
        }

        /**
         * @param p the picker.
         * @return this.
         */
        public Builder pick(final Picker p) {
            pickers.add(Objects.requireNonNull(p));
            return this;
        }

        /**
         * @param p picker used while the index is missing or stale.
         * @return this.
         */
        public Builder fallback(final Picker p) {
            this.fallback = Objects.requireNonNull(p);
            return this;
        }

        /**
         * Records a problem found while reading a definition (e.g. a YAML file), reported by {@link #build()}.
         *
         * @param plugin plugin name (may be null).
         * @param detail what is wrong.
         * @return this.
         */
        public Builder definitionProblem(final String plugin, final String detail) {
            definitionProblems.add(new ProfileValidationException.Problem(
                ProfileValidationException.Kind.BAD_DEFINITION, name, plugin, null, detail));
            return this;
        }

        /**
         * Validates and builds.
         *
         * @param registry registry the default fallback (power-of-two choices by load) reads; may be null when a
         *                 fallback was set.
         * @return the profile.
         * @throws ProfileValidationException when the profile cannot work.
         */
        public Profile build(final PodRegistry registry) {
            final Picker fb = fallback != null ? fallback
                : new io.kvidx.routing.PowerOfTwoPicker("fallback", registry);
            final List<ProfileValidationException.Problem> problems = new ArrayList<>(definitionProblems);
            validate(fb, problems);
            if (!problems.isEmpty()) {
                throw new ProfileValidationException(problems);
            }
            return new Profile(this, fb);
        }

        private void problem(final List<ProfileValidationException.Problem> problems,
            final ProfileValidationException.Kind kind, final String plugin, final Slot<?> slot, final String detail) {
            problems.add(new ProfileValidationException.Problem(kind, name, plugin, slot == null ? null : slot.name(),
                detail));
        }

        /**
         * The request supplies {@link Slots#TOKENS} unless a preparer writes them (from the request's text) and the
         * profile did not declare them as an input.
         */
        private Set<Slot<?>> effectiveInputs() {
            final Set<Slot<?>> in = new LinkedHashSet<>(inputs);
            if (!tokensDeclared) {
                for (final Preparer p : preparers) {
                    if (p.writes().contains(Slots.TOKENS)) {
                        in.remove(Slots.TOKENS);
                    }
                }
            }
            return in;
        }

        private void validate(final Picker fb, final List<ProfileValidationException.Problem> problems) {
            final List<RoutingPlugin> order = new ArrayList<>();
            checkStage(preparers, Stage.PREPARE, order, problems);
            checkStage(filters, Stage.FILTER, order, problems);
            checkStage(scorers, Stage.SCORE, order, problems);
            checkStage(pickers, Stage.PICK, order, problems);
            if (pickers.size() != 1) {
                problem(problems, ProfileValidationException.Kind.PICKER_COUNT, null, null,
                    "a profile needs exactly one picker, found " + pickers.size());
            }
            if (fb.stage() != Stage.PICK) {
                problem(problems, ProfileValidationException.Kind.WRONG_STAGE, fb.name(), null,
                    "fallback must be a picker, is a " + fb.stage() + " plugin");
            }
            final Set<String> names = new HashSet<>();
            for (final RoutingPlugin p : order) {
                if (!names.add(p.name())) {
                    problem(problems, ProfileValidationException.Kind.DUPLICATE_NAME, p.name(), null,
                        "two plugins are named '" + p.name() + "'");
                }
            }
            checkWeights(problems);
            final Map<Slot<?>, Integer> writerAt = new HashMap<>();
            final Map<Slot<?>, String> writerName = new HashMap<>();
            for (final Slot<?> in : effectiveInputs()) {
                writerAt.put(in, -1);
                writerName.put(in, REQUEST_WRITER);
            }
            for (int i = 0; i < order.size(); i++) {
                final RoutingPlugin p = order.get(i);
                for (final Slot<?> s : p.writes()) {
                    final String previous = writerName.putIfAbsent(s, p.name());
                    if (previous != null) {
                        problem(problems, ProfileValidationException.Kind.DUPLICATE_WRITER, p.name(), s,
                            "slot already written by '" + previous + "'");
                    } else {
                        writerAt.put(s, i);
                    }
                }
            }
            final Set<String> inCycle = findCycles(order, writerName, problems);
            for (int i = 0; i < order.size(); i++) {
                final RoutingPlugin p = order.get(i);
                for (final Slot<?> s : p.reads()) {
                    final Integer at = writerAt.get(s);
                    if (at == null) {
                        problem(problems, ProfileValidationException.Kind.MISSING_WRITER, p.name(), s,
                            "no plugin or request input writes this slot");
                    } else if (at >= i && !inCycle.contains(p.name())) {
                        problem(problems, ProfileValidationException.Kind.WRITER_AFTER_READER, p.name(), s,
                            "its writer '" + writerName.get(s) + "' runs later (position " + at + " > " + i + ")");
                    }
                }
            }
            for (final Slot<?> s : fb.reads()) {
                final Integer at = writerAt.get(s);
                if (at == null) {
                    problem(problems, ProfileValidationException.Kind.MISSING_WRITER, fb.name(), s,
                        "no plugin or request input writes the slot the fallback picker reads");
                } else if (at >= 0 && order.get(at).needsIndex()) {
                    problem(problems, ProfileValidationException.Kind.MISSING_WRITER, fb.name(), s,
                        "the fallback picker reads a slot whose writer '" + writerName.get(s)
                            + "' needs the index, which is missing when the fallback runs");
                }
            }
        }

        private void checkStage(final List<? extends RoutingPlugin> plugins, final Stage stage,
            final List<RoutingPlugin> order, final List<ProfileValidationException.Problem> problems) {
            for (final RoutingPlugin p : plugins) {
                if (p.stage() != stage) {
                    problem(problems, ProfileValidationException.Kind.WRONG_STAGE, p.name(), null,
                        "a " + p.stage() + " plugin was added as " + stage);
                }
                order.add(p);
            }
        }

        private void checkWeights(final List<ProfileValidationException.Problem> problems) {
            boolean positive = false;
            for (int i = 0; i < scorers.size(); i++) {
                final double w = weights.get(i);
                if (!Double.isFinite(w) || w < 0) {
                    problem(problems, ProfileValidationException.Kind.INVALID_WEIGHT, scorers.get(i).name(), null,
                        "weight must be finite and >= 0, is " + w);
                } else if (w > 0) {
                    positive = true;
                }
            }
            if (!scorers.isEmpty() && !positive) {
                problem(problems, ProfileValidationException.Kind.INVALID_WEIGHT, null, null,
                    "at least one scorer weight must be > 0");
            }
        }

        /**
         * Depth-first search over "writer of a slot -> reader of it" edges, ignoring the declared order.
         */
        private Set<String> findCycles(final List<RoutingPlugin> order, final Map<Slot<?>, String> writerName,
            final List<ProfileValidationException.Problem> problems) {
            final Map<String, RoutingPlugin> byName = new HashMap<>();
            for (final RoutingPlugin p : order) {
                byName.putIfAbsent(p.name(), p);
            }
            final Map<String, Integer> state = new HashMap<>();
            final Set<String> inCycle = new HashSet<>();
            for (final RoutingPlugin p : order) {
                dfs(p, byName, writerName, state, new ArrayList<>(), inCycle, problems);
            }
            return inCycle;
        }

        private void dfs(final RoutingPlugin p, final Map<String, RoutingPlugin> byName,
            final Map<Slot<?>, String> writerName, final Map<String, Integer> state, final List<String> path,
            final Set<String> inCycle, final List<ProfileValidationException.Problem> problems) {
            final Integer st = state.get(p.name());
            if (st != null && st == 2) {
                return;
            }
            if (st != null && st == 1) {
                final int from = path.indexOf(p.name());
                final List<String> cycle = new ArrayList<>(path.subList(from, path.size()));
                cycle.add(p.name());
                inCycle.addAll(cycle);
                final RoutingPlugin last = byName.get(path.get(path.size() - 1));
                Slot<?> via = null;
                for (final Slot<?> r : last.reads()) {
                    if (p.name().equals(writerName.get(r))) {
                        via = r;
                    }
                }
                problem(problems, ProfileValidationException.Kind.CYCLE, p.name(), via,
                    "plugins depend on each other in a circle: " + String.join(" -> ", cycle));
                return;
            }
            state.put(p.name(), 1);
            path.add(p.name());
            for (final Slot<?> s : p.reads()) {
                final String w = writerName.get(s);
                if (w != null && !REQUEST_WRITER.equals(w)) {
                    final RoutingPlugin writer = byName.get(w);
                    if (writer != null) {
                        dfs(writer, byName, writerName, state, path, inCycle, problems);
                    }
                }
            }
            path.remove(path.size() - 1);
            state.put(p.name(), 2);
        }
    }
}
