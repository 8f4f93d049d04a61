package io.kvidx.daemon.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Runs a {@code kvidx} command in-process through {@link KvidxCli#run(String...)}, capturing stdout and stderr.
 * Tests that use it must not run in parallel with other tests that print (System.out is swapped).
 *
 * @param code the exit code.
 * @param out  what it printed on stdout.
 * @param err  what it printed on stderr.
 */
public record CliRun(int code, String out, String err) {
    /** @return stdout's lines. */
    public List<String> lines() {
        return out.lines().toList();
    }

    /**
     * @param args the command line.
     * @return what it did.
     */
    public static CliRun of(final String... args) {
        return of(KvidxCli::run, args);
    }

    /**
     * @param cli  the command line's entry point ({@link KvidxCli#run}, or the tools jar's).
     * @param args the command line.
     * @return what it did.
     */
    public static CliRun of(final java.util.function.ToIntFunction<String[]> cli, final String... args) {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final PrintStream originalOut = System.out;
        final PrintStream originalErr = System.err;
        final int code;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            code = cli.applyAsInt(args);
        } finally {
            System.setOut(originalOut);
            System.setErr(originalErr);
        }
        return new CliRun(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
