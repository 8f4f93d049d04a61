package io.kvidx.tools;

import io.kvidx.daemon.cli.KvidxCli;
import picocli.CommandLine;

/**
 * The full {@code kvidx} command line of the launcher ({@code kvidx.jar}): the daemon's commands
 * ({@link KvidxCli}) plus the ones that route or tokenize and so cannot live in the daemon's jar: {@code demo}
 * (an in-process fleet, writer and routing readers), {@code demo-reader} (its reader processes) and {@code query}
 * (a prefix query by token ids, text or chat). Text needs the tokenizer's jar on the class path
 * ({@code ./kvidx} adds it when {@code --text}, {@code --messages} or {@code --tokenizer} is given).
 */
public final class ToolsCli {
    private ToolsCli() {
    }

    /**
     * Entry point.
     *
     * @param args command line.
     */
    public static void main(final String[] args) {
        System.exit(run(args));
    }

    /**
     * Runs the command line and returns its exit code (2 for usage errors).
     *
     * @param args command line.
     * @return exit code.
     */
    public static int run(final String... args) {
        final CommandLine cli = new CommandLine(new KvidxCli())
            .addSubcommand(new QueryCommand())
            .addSubcommand(new DemoCommand())
            .addSubcommand(new DemoReaderCommand());
        return KvidxCli.execute(cli, args);
    }
}
