package io.kvidx.daemon.serve;

import io.netty.buffer.Unpooled;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Combinators;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The token-id fast path reads exactly what jackson-core alone reads, or gives the body to it: random bodies built
 * from valid and hostile pieces (spacing, strings that contain the key, nested values, duplicate keys, leading
 * zeros, signs, fractions, numbers past 2^31, escapes, truncation) are read with and without it, and the outcome
 * (the fields, or the refusal's status and code) must be the same.
 */
class RequestBodyTest {
    @Property(tries = 3000)
    void shouldReadTheSameWithAndWithoutTheFastPath(@ForAll("bodies") final String body) {
        assertEquals(outcome(body, false), outcome(body, true), body);
    }

    private static String outcome(final String body, final boolean fastPath) {
        final RequestBody b = new RequestBody(64, fastPath);
        try {
            b.read(Unpooled.wrappedBuffer(body.getBytes(StandardCharsets.UTF_8)));
        } catch (final ApiException ex) {
            return "refused " + ex.status() + " " + ex.code();
        }
        return "tokens " + b.hasTokens + " " + Arrays.toString(Arrays.copyOf(b.tokens, b.tokenCount)) + " model "
            + b.model + " salt " + b.salt;
    }

    @Provide
    Arbitrary<String> bodies() {
        final Arbitrary<String> space = Arbitraries.of("", " ", "\n", "\t ", "\r\n");
        final Arbitrary<String> number = Arbitraries.oneOf(
            Arbitraries.integers().between(0, 100_000).map(String::valueOf),
            Arbitraries.of("0", "2147483647", "2147483648", "99999999999", "-1", "01", "1.5", "1e3", "00", "-0", "7"));
        final Arbitrary<String> array = Combinators.combine(number.list().ofMaxSize(70), space).as((nums, sp) ->
            "[" + sp + String.join("," + sp, nums) + sp + "]");
        final Arbitrary<String> tokenField = Combinators.combine(space, array).as((sp, a) ->
            "\"token_ids\"" + sp + ":" + sp + a);
        final Arbitrary<String> other = Arbitraries.of("\"model_name\":\"m\"", "\"cache_salt\":\"token_ids\"",
            "\"x\":{\"token_ids\":[1,2,3]}", "\"y\":[\"token_ids\",\"]\"]", "\"tok\\\"en_ids\":[4]",
            "\"model_name\":\"a\\\"b\"", "\"token_ids\":\"nope\"", "\"token_ids\":[[1]]", "\"z\":null");
        final Arbitrary<List<String>> fields = Arbitraries.oneOf(tokenField, other).list().ofMinSize(0).ofMaxSize(4);
        return Combinators.combine(fields, space, Arbitraries.integers().between(0, 12)).as((f, sp, cut) -> {
            final String whole = "{" + sp + String.join("," + sp, f) + sp + "}";
            return cut == 0 ? whole.substring(0, whole.length() / 2) : whole;
        });
    }
}
