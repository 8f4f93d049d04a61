package io.kvidx.epp;

import java.io.IOException;
import picocli.CommandLine;

/**
 * The configuration {@code kvidx epp ARGS} would start with, made by {@link EppCommand}'s own parser and its
 * package-private {@code build()} (the YAML file read, the options laid over it, {@link EppConfig#validate()}), without
 * starting anything. In this package only to reach {@code build()}; deploy/test's manifest checks call it.
 */
public final class EppArgs {
    private EppArgs() {
    }

    /**
     * @param args the container's args, variables expanded and file paths pointing at readable copies.
     * @return the validated configuration.
     * @throws CommandLine.ParameterException when picocli refuses the args.
     * @throws IllegalArgumentException       when the configuration does not validate.
     * @throws IOException                    when the --config file cannot be read.
     */
    public static EppConfig validated(final String... args) throws IOException {
        final EppCommand command = new EppCommand();
        final CommandLine.ParseResult r = new CommandLine(command).parseArgs(args);
        if (!r.unmatched().isEmpty()) {
            throw new IllegalArgumentException("unmatched args " + r.unmatched());
        }
        return command.build();
    }

    /**
     * @param c a validated configuration.
     * @return whether it serves TLS.
     */
    public static boolean servesTls(final EppConfig c) {
        return c.tlsCert != null && c.tlsKey != null;
    }

    /**
     * @param c a validated configuration.
     * @return whether it lists pods or a pod URL template (the picker's base must not: its pods come from discovery).
     */
    public static boolean namesPods(final EppConfig c) {
        return !c.pods.isEmpty() || c.urlTemplate != null;
    }

    /**
     * @param c a validated configuration.
     * @return its index directory.
     */
    public static String indexDir(final EppConfig c) {
        return c.dir;
    }
}
