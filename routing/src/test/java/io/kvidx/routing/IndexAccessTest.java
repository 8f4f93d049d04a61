package io.kvidx.routing;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexAccessDeniedException;
import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A router that may not read the index is told which file and what to do, not handed a raw
 * {@link java.nio.file.AccessDeniedException}. The router is a separate process ({@link IndexAccessProbe}); when the
 * test runs as root (whom a mode-000 file does not stop), that process runs as the unprivileged user
 * {@code nobody} through util-linux's {@code setpriv}, so the check runs everywhere.
 */
@Timeout(60)
class IndexAccessTest {
    private static final Path SETPRIV = Path.of("/usr/bin/setpriv");
    private static final String NOBODY = "65534";

    @TempDir
    Path dir;

    @Test
    void shouldNameTheFileAndTheFixWhenTheIndexIsNotReadable() throws Exception {
        final Path file = IndexConfiguration.indexFile(dir, "locked");
        Files.createDirectories(file.getParent());
        Files.write(file, new byte[IndexDescriptor.HEADER_LENGTH]);
        Files.setPosixFilePermissions(file, EnumSet.noneOf(PosixFilePermission.class));
        try {
            final boolean privileged = Files.isReadable(file);
            final List<String> command = new ArrayList<>();
            final String user;
            if (privileged) {
                assertTrue(Files.isExecutable(SETPRIV), "running as root: util-linux's setpriv is needed to run the "
                    + "router as an unprivileged user (apt-get install -y util-linux)");
                // nobody must reach the index's directory (not the file) and the probe's classes.
                for (Path p = file.getParent(); p != null && p.startsWith(dir.getParent()); p = p.getParent()) {
                    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
                }
                command.addAll(List.of(SETPRIV.toString(), "--reuid=" + NOBODY, "--regid=" + NOBODY,
                    "--clear-groups"));
                user = "nobody";
            } else {
                user = System.getProperty("user.name");
            }
            command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", readableClassPath(), IndexAccessProbe.class.getName(), dir.toString(), "locked"));
            final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            final ByteArrayOutputStream out = new ByteArrayOutputStream();
            process.getInputStream().transferTo(out);
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "probe did not finish");
            final String text = out.toString(StandardCharsets.UTF_8);
            assertEquals(0, process.exitValue(), text);
            final List<String> lines = text.lines().toList();
            final String denied = lines.stream().filter(l -> l.startsWith("denied ")).findFirst().orElse("");
            assertTrue(denied.startsWith("denied " + IndexAccessDeniedException.class.getName()), text);
            assertTrue(denied.contains(file.toString()), denied);
            assertTrue(denied.contains("add the router's user to the daemon's group, see tuning/README.md"), denied);
            assertTrue(denied.contains(user), denied);
            assertTrue(lines.contains("cause java.nio.file.AccessDeniedException"), text);
            assertTrue(lines.contains("available false"), text);
            assertTrue(lines.contains("failure " + IndexAccessDeniedException.class.getName()),
                "a router can tell why it falls back: " + text);
        } finally {
            Files.setPosixFilePermissions(file, EnumSet.of(PosixFilePermission.OWNER_READ,
                PosixFilePermission.OWNER_WRITE));
        }
        assertEquals(IndexDescriptor.HEADER_LENGTH, Files.size(file));
    }

    /**
     * The routing module's compiled classes (main and test), the index client's and the native module's, all the probe needs, copied where any
     * user can read them: a clone (and the Maven repository) may live in a directory the unprivileged user cannot
     * enter.
     */
    private String readableClassPath() throws IOException, java.net.URISyntaxException {
        final Path copy = dir.resolve("classes");
        final List<String> entries = new ArrayList<>();
        int n = 0;
        for (final Class<?> c : List.of(IndexReader.class, IndexReaderPodIndex.class, IndexAccessProbe.class,
            io.kvidx.ffm.Layouts.class)) {
            final Path source = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
            final Path target = copy.resolve(n++ + "-" + source.getFileName());
            Files.createDirectories(copy);
            if (Files.isRegularFile(source)) {
                Files.copy(source, target, StandardCopyOption.REPLACE_EXISTING);
                entries.add(target.toString());
                continue;
            }
            try (Stream<Path> files = Files.walk(source)) {
                for (final Path p : (Iterable<Path>) files::iterator) {
                    final Path to = target.resolve(source.relativize(p).toString());
                    if (Files.isDirectory(p)) {
                        Files.createDirectories(to);
                    } else {
                        Files.copy(p, to, StandardCopyOption.REPLACE_EXISTING);
                    }
                }
            }
            entries.add(target.toString());
        }
        try (Stream<Path> all = Files.walk(copy)) {
            for (final Path p : (Iterable<Path>) all::iterator) {
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(
                    Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
            }
        }
        return String.join(":", entries);
    }
}
