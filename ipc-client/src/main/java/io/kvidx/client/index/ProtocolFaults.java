package io.kvidx.client.index;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Switches that leave one step of a publication protocol out of the product's own writer or reader, so that the
 * jcstress tests can prove that the step is what keeps their forbidden outcomes away ({@code ./kvidx jcstress-broken},
 * docs/testing.md): the test JVM runs the real {@code IndexWriter} / {@code TierMapWriter} against the real
 * {@code IndexReader} / {@code TierMapReader} with {@code -D}{@value #OMIT_PROP_NAME}{@code =<step>}, and the test
 * must then fail.
 *
 * <p><b>They exist only to prove the tests and must never be set in production:</b> a set switch corrupts what the
 * router reads. The property is read once, when this class is initialised; unset (always, outside those tests)
 * every switch is {@code false}, and as they are {@code static final} the JIT folds each check away: the hot paths
 * compile to the code without the switch. An unknown step name stops the JVM's first use of the index (an
 * {@link ExceptionInInitializerError} caused by an {@link IllegalArgumentException} that lists the steps), so a
 * misspelt name never runs the intact protocol while claiming to omit a step. The daemon logs a warning at start
 * when the property is set.
 *
 * <p><b>Note:</b> constants only; thread safe.
 */
public final class ProtocolFaults {
    /** System property naming the one protocol step to leave out ({@link Step#stepName()}); unset in production. */
    public static final String OMIT_PROP_NAME = "kvidx.protocol.omit";

    /** The steps that can be left out, each checked at exactly one step of the product's code. */
    public enum Step {
        /**
         * {@code EntryTable} (the daemon's store of a new key): the pods word is written before the key is published
         * with a release store. Omitted: the key is published first, then the pods word, the order a compiler or a
         * weakly ordered CPU may choose once the release store is gone.
         */
        ENTRY_PODS_BEFORE_KEY("entry-pods-before-key"),
        /**
         * {@code KeyLookup} (the router's lookup, both paths): the acquire fence between the key found and the pods
         * word. Omitted: no fence, loads in program order (x86 does not reorder them).
         */
        ENTRY_ACQUIRE_FENCE("entry-acquire-fence"),
        /**
         * {@code EntryTable.delete} (backward-shift deletion): the shard version made odd before the moves and even
         * after them ({@link Seqlock#beginWrite} / {@link Seqlock#endWrite}). Omitted: the version never moves.
         */
        SHARD_VERSION_BUMP("shard-version-bump"),
        /**
         * {@code KeyLookup} (both paths): the second read of the shard version ({@link Seqlock#validate}) after the
         * probe. Omitted: whatever the probe read is answered.
         */
        SHARD_VERSION_CHECK("shard-version-check"),
        /**
         * {@code IndexReader.pod}: the second read of the pod entry's seqlock after the copy. Omitted: the copy is
         * answered.
         */
        POD_SEQ_CHECK("pod-seq-check"),
        /**
         * {@code TierMapWriter.update} of a new key: the value is written before the key is published with a release
         * store. Omitted: the key first, then the value.
         */
        TIER_VALUE_BEFORE_KEY("tier-value-before-key"),
        /**
         * {@code TierMapReader.tierBits}: the second read of the region version after the probe. Omitted: whatever
         * the probe read is answered.
         */
        TIER_VERSION_CHECK("tier-version-check");

        private final String stepName;

        Step(final String stepName) {
            this.stepName = stepName;
        }

        /**
         * @return the step's name, as {@value ProtocolFaults#OMIT_PROP_NAME} takes it.
         */
        public String stepName() {
            return stepName;
        }
    }

    /** The step left out in this JVM, or null (production: the property is unset). */
    public static final Step OMITTED = parse(System.getProperty(OMIT_PROP_NAME));

    /** {@link Step#ENTRY_PODS_BEFORE_KEY} is left out. */
    public static final boolean OMIT_ENTRY_PODS_BEFORE_KEY = OMITTED == Step.ENTRY_PODS_BEFORE_KEY;
    /** {@link Step#ENTRY_ACQUIRE_FENCE} is left out. */
    public static final boolean OMIT_ENTRY_ACQUIRE_FENCE = OMITTED == Step.ENTRY_ACQUIRE_FENCE;
    /** {@link Step#SHARD_VERSION_BUMP} is left out. */
    public static final boolean OMIT_SHARD_VERSION_BUMP = OMITTED == Step.SHARD_VERSION_BUMP;
    /** {@link Step#SHARD_VERSION_CHECK} is left out. */
    public static final boolean OMIT_SHARD_VERSION_CHECK = OMITTED == Step.SHARD_VERSION_CHECK;
    /** {@link Step#POD_SEQ_CHECK} is left out. */
    public static final boolean OMIT_POD_SEQ_CHECK = OMITTED == Step.POD_SEQ_CHECK;
    /** {@link Step#TIER_VALUE_BEFORE_KEY} is left out. */
    public static final boolean OMIT_TIER_VALUE_BEFORE_KEY = OMITTED == Step.TIER_VALUE_BEFORE_KEY;
    /** {@link Step#TIER_VERSION_CHECK} is left out. */
    public static final boolean OMIT_TIER_VERSION_CHECK = OMITTED == Step.TIER_VERSION_CHECK;

    private ProtocolFaults() {
    }

    /**
     * @param value the property's value, or null.
     * @return the step it names, or null when it is null or blank.
     * @throws IllegalArgumentException when it names no step.
     */
    static Step parse(final String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        final String name = value.strip().toLowerCase(Locale.ROOT);
        for (final Step step : Step.values()) {
            if (step.stepName.equals(name)) {
                return step;
            }
        }
        throw new IllegalArgumentException("-D" + OMIT_PROP_NAME + "=" + value + " names no protocol step; the steps: "
            + Arrays.stream(Step.values()).map(Step::stepName).collect(Collectors.joining(", ")));
    }
}
