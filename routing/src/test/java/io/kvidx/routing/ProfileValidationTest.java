package io.kvidx.routing;

import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.RoundRobinScorer;
import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProfileValidationTest {
    static final Slot<LongValue> A = Slot.of("a", LongValue.class, LongValue::new);
    static final Slot<LongValue> B = Slot.of("b", LongValue.class, LongValue::new);

    private final PodRegistry registry = new PodRegistry();

    static Preparer prep(final String name, final Set<Slot<?>> reads, final Set<Slot<?>> writes) {
        return new Preparer() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public Set<Slot<?>> reads() {
                return reads;
            }

            @Override
            public Set<Slot<?>> writes() {
                return writes;
            }

            @Override
            public void prepare(final RoutingContext ctx) {
            }
        };
    }

    static Scorer scorer(final String name, final Set<Slot<?>> reads) {
        return new Scorer() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public Set<Slot<?>> reads() {
                return reads;
            }

            @Override
            public void score(final RoutingContext ctx, final double[] scores) {
            }
        };
    }

    private ProfileValidationException fails(final Profile.Builder b) {
        return assertThrows(ProfileValidationException.class, () -> b.build(registry));
    }

    @Test
    void shouldBuildAValidProfile() {
        final Profile p = Profile.builder("ok")
            .prepare(prep("w-a", Set.of(Slots.TOKENS), Set.of(A)))
            .prepare(prep("w-b", Set.of(A), Set.of(B)))
            .score(scorer("s", Set.of(A, B)), 1.0)
            .pick(new MaxScorePicker("max"))
            .build(registry);
        assertEquals("ok", p.name());
        assertEquals("fallback", p.fallback().name());
    }

    @Test
    void shouldNameThePluginAndSlotWithoutAWriter() {
        final ProfileValidationException ex = fails(Profile.builder("p")
            .score(scorer("needs-a", Set.of(A)), 1.0)
            .pick(new MaxScorePicker("max")));
        assertEquals(ProfileValidationException.Kind.MISSING_WRITER, ex.problem());
        assertEquals("needs-a", ex.plugin());
        assertEquals("a", ex.slot());
        assertEquals("p", ex.profile());
    }

    @Test
    void shouldRejectAWriterAfterItsReader() {
        final ProfileValidationException ex = fails(Profile.builder("p")
            .prepare(prep("reader", Set.of(A), Set.of()))
            .prepare(prep("writer", Set.of(), Set.of(A)))
            .pick(new MaxScorePicker("max")));
        assertEquals(ProfileValidationException.Kind.WRITER_AFTER_READER, ex.problem());
        assertEquals("reader", ex.plugin());
        assertEquals("a", ex.slot());
    }

    @Test
    void shouldReportACycle() {
        final ProfileValidationException ex = fails(Profile.builder("p")
            .prepare(prep("x", Set.of(B), Set.of(A)))
            .prepare(prep("y", Set.of(A), Set.of(B)))
            .pick(new MaxScorePicker("max")));
        assertEquals(ProfileValidationException.Kind.CYCLE, ex.problem());
        assertTrue(ex.getMessage().contains("x -> y -> x") || ex.getMessage().contains("y -> x -> y"),
            ex.getMessage());
        assertTrue(ex.slot().equals("a") || ex.slot().equals("b"));
    }

    @Test
    void shouldRejectTwoWritersOfOneSlot() {
        final ProfileValidationException ex = fails(Profile.builder("p")
            .prepare(prep("first", Set.of(), Set.of(A)))
            .prepare(prep("second", Set.of(), Set.of(A)))
            .pick(new MaxScorePicker("max")));
        assertEquals(ProfileValidationException.Kind.DUPLICATE_WRITER, ex.problem());
        assertEquals("second", ex.plugin());
        assertEquals("a", ex.slot());
    }

    @Test
    void shouldRejectWritingARequestInput() {
        final ProfileValidationException ex = fails(Profile.builder("p")
            .prepare(prep("overwrites-request", Set.of(), Set.of(Slots.REQUEST)))
            .pick(new MaxScorePicker("max")));
        assertEquals(ProfileValidationException.Kind.DUPLICATE_WRITER, ex.problem());
        assertTrue(ex.getMessage().contains("'request'"), ex.getMessage());
    }

    @Test
    void shouldRejectInvalidWeights() {
        assertEquals(ProfileValidationException.Kind.INVALID_WEIGHT, fails(Profile.builder("p")
            .score(new RoundRobinScorer("rr"), -1).pick(new MaxScorePicker("max"))).problem());
        assertEquals("rr", fails(Profile.builder("p")
            .score(new RoundRobinScorer("rr"), Double.NaN).pick(new MaxScorePicker("max"))).plugin());
        assertEquals(ProfileValidationException.Kind.INVALID_WEIGHT, fails(Profile.builder("p")
            .score(new RoundRobinScorer("rr"), 0).pick(new MaxScorePicker("max"))).problem());
    }

    @Test
    void shouldRequireExactlyOnePicker() {
        assertEquals(ProfileValidationException.Kind.PICKER_COUNT, fails(Profile.builder("p")).problem());
        assertEquals(ProfileValidationException.Kind.PICKER_COUNT, fails(Profile.builder("p")
            .pick(new MaxScorePicker("a")).pick(new MaxScorePicker("b"))).problem());
    }

    @Test
    void shouldRejectDuplicateNames() {
        final ProfileValidationException ex = fails(Profile.builder("p")
            .score(new RoundRobinScorer("same"), 1).pick(new MaxScorePicker("same")));
        assertEquals(ProfileValidationException.Kind.DUPLICATE_NAME, ex.problem());
        assertEquals("same", ex.plugin());
    }

    @Test
    void shouldCollectEveryProblem() {
        final ProfileValidationException ex = fails(Profile.builder("p")
            .score(scorer("needs-a", Set.of(A)), -2));
        assertTrue(ex.problems().size() >= 3, ex.getMessage());
    }

    @Test
    void shouldRejectADecodeProfileWhoseInputNobodyWrites() {
        final Profile prefill = Profile.builder("prefill").pick(new MaxScorePicker("max")).build(registry);
        final Profile decode = Profile.builder("decode").input(A).pick(new MaxScorePicker("max")).build(registry);
        final ProfileValidationException ex = assertThrows(ProfileValidationException.class,
            () -> new PrefillDecodeWorkflow(new Selector(prefill, registry, null), new Selector(decode, registry,
                null)));
        assertEquals(ProfileValidationException.Kind.MISSING_WRITER, ex.problem());
        assertEquals("decode", ex.profile());
        assertEquals("a", ex.slot());
    }

    @Test
    void shouldLetATextPreparerWriteTheTokensUnlessTheProfileDeclaresThem() {
        final Profile p = Profile.builder("text")
            .prepare(prep("tokenize", Set.of(Slots.REQUEST), Set.of(Slots.TOKENS)))
            .prepare(prep("keys", Set.of(Slots.TOKENS), Set.of(A)))
            .pick(new MaxScorePicker("max"))
            .build(registry);
        assertEquals(Set.of(Slots.REQUEST), p.inputs());
        ProfileValidationException ex = fails(Profile.builder("late")
            .prepare(prep("keys", Set.of(Slots.TOKENS), Set.of(A)))
            .prepare(prep("tokenize", Set.of(Slots.REQUEST), Set.of(Slots.TOKENS)))
            .pick(new MaxScorePicker("max")));
        assertEquals(ProfileValidationException.Kind.WRITER_AFTER_READER, ex.problem());
        assertEquals("keys", ex.plugin());
        ex = fails(Profile.builder("declared").input(Slots.TOKENS)
            .prepare(prep("tokenize", Set.of(Slots.REQUEST), Set.of(Slots.TOKENS)))
            .pick(new MaxScorePicker("max")));
        assertEquals(ProfileValidationException.Kind.DUPLICATE_WRITER, ex.problem());
    }
}
