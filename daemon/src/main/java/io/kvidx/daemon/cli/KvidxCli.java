package io.kvidx.daemon.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The daemon's command line ({@code kvidx-daemon.jar}, what the daemon's image runs): the daemon and the commands that
 * read its files (counters, status, errors) or hash keys. The commands that route or tokenize (demo, query) are the
 * tools module's ({@code io.kvidx.tools.ToolsCli}, which adds them to this one). Run through the {@code ./kvidx}
 * launcher, which finds a JDK 25 and builds the jars when needed.
 */
@Command(name = "kvidx", mixinStandardHelpOptions = true, version = "kvidx 0.1.0",
    description = "Sub-microsecond KV-cache block index for LLM routing.",
    subcommands = {
        CommandLine.HelpCommand.class,
        DaemonCommand.class,
        CountersCommand.class,
        StatusCommand.class,
        ErrorsCommand.class,
        HashCommand.class,
    })
public final class KvidxCli implements Runnable {
    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

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
        return execute(new CommandLine(new KvidxCli()), args);
    }

    /**
     * Runs a command line built on this one (the tools jar adds its commands to it) with kvidx's exit codes: 2 for
     * usage errors and {@link IllegalArgumentException}s, 1 for other failures.
     *
     * @param cli  the command line, e.g. {@code new CommandLine(new KvidxCli())} with more subcommands.
     * @param args command line.
     * @return exit code.
     */
    public static int execute(final CommandLine cli, final String... args) {
        cli.setExitCodeExceptionMapper(ex -> 1);
        cli.setParameterExceptionHandler((ex, a) -> {
            ex.getCommandLine().getErr().println("kvidx: " + ex.getMessage());
            return 2;
        });
        cli.setExecutionExceptionHandler((ex, parsed, result) -> {
            parsed.getErr().println("kvidx: " + ex.getMessage());
            return ex instanceof IllegalArgumentException ? 2 : 1;
        });
        return cli.execute(args);
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }
}
