package io.kvidx.bench;

import java.util.Arrays;

/**
 * Main class of kvidx-bench.jar: {@code query} and {@code xproc} run the short harness comparisons, {@code trace}
 * replays a request trace through the daemon and a router process ({@link io.kvidx.bench.trace.TraceBench}), {@code restart}
 * times a writer's re-attach to a large index ({@link RestartBench}), {@code http} times {@code POST /query}
 * against an in-process daemon ({@link HttpQueryBench}), {@code http-auth} what a bearer token adds to it
 * ({@link AuthCostBench}), {@code tokenize} runs the text-to-router-keys
 * JMH benchmark and summarises it ({@link io.kvidx.bench.tokenize.TokenizeBench}), {@code router} measures
 * {@code kvidx router} end to end and its added latency ({@link io.kvidx.bench.router.RouterBench}), {@code epp}
 * the latency {@code kvidx epp} adds per request ({@link io.kvidx.bench.epp.EppBench}); anything else is handed to
 * JMH's {@code org.openjdk.jmh.Main} (benchmark names, -prof gc, -h, ...).
 */
public final class BenchMain {
    private BenchMain() {
    }

    /**
     * @param args command and options; see {@link BenchOptions#usage()}.
     * @throws Exception when JMH fails.
     */
    public static void main(final String[] args) throws Exception {
        BenchFlags.disableChronicleAnalytics();
        final String command = args.length == 0 ? "" : args[0];
        final String[] rest = args.length == 0 ? args : Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "query", "xproc" -> {
                final BenchOptions options;
                try {
                    options = BenchOptions.parse(rest);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench: " + ex.getMessage());
                    System.err.println(BenchOptions.usage());
                    System.exit(2);
                    return;
                }
                if (command.equals("query")) {
                    QueryBench.run(options, System.out);
                } else {
                    XprocBench.run(options, System.out);
                }
                System.exit(0);
            }
            case "restart" -> {
                final RestartBench.Options options;
                try {
                    options = RestartBench.Options.parse(rest);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench restart: " + ex.getMessage());
                    System.err.println(RestartBench.usage());
                    System.exit(2);
                    return;
                }
                RestartBench.run(options, System.out);
                System.exit(0);
            }
            case "http" -> {
                final HttpQueryBench.Options options;
                try {
                    options = HttpQueryBench.Options.parse(rest);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench http: " + ex.getMessage());
                    System.err.println(HttpQueryBench.usage());
                    System.exit(2);
                    return;
                }
                HttpQueryBench.run(options, System.out);
                System.exit(0);
            }
            case AuthCostBench.COMMAND -> {
                final AuthCostBench.Options options;
                try {
                    options = AuthCostBench.Options.parse(rest);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench http-auth: " + ex.getMessage());
                    System.err.println(AuthCostBench.usage());
                    System.exit(2);
                    return;
                }
                AuthCostBench.run(options, System.out);
                System.exit(0);
            }
            case "trace" -> {
                try {
                    io.kvidx.bench.trace.TraceBench.run(rest, System.out);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench trace: " + ex.getMessage());
                    System.err.println(io.kvidx.bench.trace.TraceBench.usage());
                    System.exit(2);
                    return;
                } catch (final java.io.IOException ex) {
                    System.err.println("kvidx bench trace: cannot read the trace: " + ex);
                    System.exit(1);
                    return;
                }
                System.exit(0);
            }
            case "router" -> {
                try {
                    io.kvidx.bench.router.RouterBench.run(rest, System.out);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench router: " + ex.getMessage());
                    System.err.println(io.kvidx.bench.router.RouterBench.usage());
                    System.exit(2);
                    return;
                } catch (final java.io.IOException ex) {
                    System.err.println("kvidx bench router: " + ex.getMessage());
                    System.exit(1);
                    return;
                }
                System.exit(0);
            }
            case "epp" -> {
                try {
                    io.kvidx.bench.epp.EppBench.run(rest, System.out);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench epp: " + ex.getMessage());
                    System.err.println(io.kvidx.bench.epp.EppBench.usage());
                    System.exit(2);
                    return;
                } catch (final java.io.IOException ex) {
                    System.err.println("kvidx bench epp: " + ex.getMessage());
                    System.exit(1);
                    return;
                }
                System.exit(0);
            }
            case "tokenize" -> {
                try {
                    io.kvidx.bench.tokenize.TokenizeBench.run(rest, System.out);
                } catch (final IllegalArgumentException ex) {
                    System.err.println("kvidx bench tokenize: " + ex.getMessage());
                    System.err.println(io.kvidx.bench.tokenize.TokenizeBench.usage());
                    System.exit(2);
                    return;
                }
                System.exit(0);
            }
            case XprocReader.COMMAND -> XprocReader.main(rest);
            case io.kvidx.bench.trace.TraceRouter.COMMAND -> io.kvidx.bench.trace.TraceRouter.main(rest);
            case "help", "--help" -> System.out.println(BenchOptions.usage());
            default -> org.openjdk.jmh.Main.main(args);
        }
    }
}
