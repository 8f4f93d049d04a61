package io.kvidx.daemon.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code kvidx} command line: one subcommand per job. Run through the {@code ./kvidx} launcher, which finds
 * a JDK 25 and builds the jar when needed.
 */
@Command(name = "kvidx", mixinStandardHelpOptions = true, version = "kvidx 0.1.0",
    description = "Sub-microsecond KV-cache block index for LLM routing.",
    subcommands = {
        CommandLine.HelpCommand.class,
        DaemonCommand.class,
        QueryCommand.class,
        DemoCommand.class,
        CountersCommand.class,
        StatusCommand.class,
        ErrorsCommand.class,
        DemoReaderCommand.class,
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
        final CommandLine cli = new CommandLine(new KvidxCli());
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
