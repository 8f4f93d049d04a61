package io.kvidx.bench.router;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * nginx for {@code bench router}'s overhead part, from a configuration written under the run's directory (its own
 * pid, logs and temp paths; loopback only; {@code nginx -p DIR -e LOG -c FILE -g 'daemon off;'}): the fast upstream
 * ({@code return 200} with a fixed completion) and the reference reverse proxy (one upstream server, keep-alive
 * connections to it, request bodies buffered in memory).
 */
final class Nginx {
    /** Where Debian's package puts it. */
    static final String DEBIAN_BINARY = "/usr/sbin/nginx";

    private Nginx() {
    }

    /**
     * @param configured {@code --nginx}, or null.
     * @return an executable nginx (the configured one, Debian's, or the first on PATH), or null when there is none.
     */
    static String find(final String configured) {
        if (configured != null) {
            return Files.isExecutable(Path.of(configured)) ? configured : null;
        }
        if (Files.isExecutable(Path.of(DEBIAN_BINARY))) {
            return DEBIAN_BINARY;
        }
        final String path = System.getenv("PATH");
        if (path != null) {
            for (final String d : path.split(File.pathSeparator)) {
                final Path p = Path.of(d, "nginx");
                if (Files.isExecutable(p)) {
                    return p.toString();
                }
            }
        }
        return null;
    }

    /**
     * Starts the fast upstream: one worker answering every request with {@code answer}.
     *
     * @param procs  where it runs.
     * @param nginx  the binary.
     * @param answer the JSON answer (no single quote, no {@code $}).
     * @return its port.
     * @throws IOException when it does not come up.
     */
    static int startUpstream(final ChildProcesses procs, final String nginx, final String answer)
        throws IOException {
        final int port = io.kvidx.bench.BenchFlags.freeLoopbackPort();
        final String server = "  server {\n    listen 127.0.0.1:" + port + " backlog=4096;\n"
            + "    location / {\n      default_type application/json;\n      return 200 '" + answer + "';\n"
            + "    }\n  }\n";
        start(procs, nginx, "nginx-upstream", 1, port, server);
        return port;
    }

    /**
     * Starts the reverse proxy in front of {@code upstreamPort}.
     *
     * @param procs        where it runs.
     * @param nginx        the binary.
     * @param upstreamPort the upstream's port.
     * @param workers      worker processes.
     * @return its port.
     * @throws IOException when it does not come up.
     */
    static int startProxy(final ChildProcesses procs, final String nginx, final int upstreamPort, final int workers)
        throws IOException {
        final int port = io.kvidx.bench.BenchFlags.freeLoopbackPort();
        final String server = "  upstream pods {\n    server 127.0.0.1:" + upstreamPort + ";\n    keepalive 256;\n"
            + "  }\n  server {\n    listen 127.0.0.1:" + port + " backlog=4096;\n    location / {\n"
            + "      proxy_pass http://pods;\n      proxy_http_version 1.1;\n"
            + "      proxy_set_header Connection \"\";\n    }\n  }\n";
        start(procs, nginx, "nginx-proxy", workers, port, server);
        return port;
    }

    private static void start(final ChildProcesses procs, final String nginx, final String name, final int workers,
        final int port, final String servers) throws IOException {
        final Path dir = Files.createDirectories(procs.dir().resolve(name));
        final String conf = "worker_processes " + workers + ";\n"
            + "pid " + dir.resolve("nginx.pid") + ";\n"
            + "error_log " + dir.resolve("error.log") + " warn;\n"
            + "events {\n  worker_connections 8192;\n}\n"
            + "http {\n"
            + "  access_log off;\n"
            + "  client_body_temp_path " + dir.resolve("client-body") + ";\n"
            + "  proxy_temp_path " + dir.resolve("proxy") + ";\n"
            + "  fastcgi_temp_path " + dir.resolve("fastcgi") + ";\n"
            + "  uwsgi_temp_path " + dir.resolve("uwsgi") + ";\n"
            + "  scgi_temp_path " + dir.resolve("scgi") + ";\n"
            + "  client_max_body_size 16m;\n"
            + "  client_body_buffer_size 256k;\n"
            + "  keepalive_requests 10000000;\n"
            + "  keepalive_timeout 300s;\n"
            + servers
            + "}\n";
        final Path file = dir.resolve("nginx.conf");
        Files.writeString(file, conf);
        final Process p = procs.start(name, List.of(nginx, "-p", dir.toString(), "-e",
            dir.resolve("error.log").toString(), "-c", file.toString(), "-g", "daemon off;"));
        awaitPort(p, port, name, procs);
    }

    /**
     * Waits until something accepts connections on the port.
     *
     * @param p     the process that should.
     * @param port  the port.
     * @param name  the process's name.
     * @param procs where it runs (for its log).
     * @throws IOException when it dies or does not accept within {@link Fleet#START_LIMIT_MS}.
     */
    static void awaitPort(final Process p, final int port, final String name, final ChildProcesses procs)
        throws IOException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Fleet.START_LIMIT_MS);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1_000);
                return;
            } catch (final IOException ex) {
                if (!p.isAlive() || System.nanoTime() > deadline) {
                    throw new IOException(name + " does not listen on " + port + "; its log ends: "
                        + procs.tail(name), ex);
                }
                ChildProcesses.sleep(20);
            }
        }
    }
}
