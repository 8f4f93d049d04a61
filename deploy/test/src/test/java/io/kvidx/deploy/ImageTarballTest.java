package io.kvidx.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Opens the OCI tarballs that `mvn -Pimages package` writes (deploy/images/{daemon,router,epp}/target/jib-image.tar)
 * and checks the config (user, entrypoint, environment, volumes) and the layers (java, glibc's loader, the jars).
 * Skipped, saying so, without -Pimages.
 */
class ImageTarballTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Each image's main class, by the module directory its tarball lies in. */
    private static final Map<String, String> MAIN_CLASSES = Map.of(
        "daemon", "io.kvidx.daemon.cli.KvidxCli",
        "router", "io.kvidx.router.RouterCommand",
        "epp", "io.kvidx.epp.EppCommand");

    @Test
    void theImagesHoldTheRuntimeTheJarsAndANonRootEntrypoint() throws IOException {
        final String tars = System.getProperty("kvidx.image.tars");
        Assumptions.assumeTrue(tars != null && !tars.isBlank(),
            "no image tarballs: build them with `mvn -Pimages package` (deploy/images) to run this test");
        for (final String t : tars.split(",")) {
            final Path tar = Path.of(t.trim());
            assertTrue(Files.isRegularFile(tar), tar + " is missing");
            // deploy/images/<which>/target/jib-image.tar
            check(tar, tar.getParent().getParent().getFileName().toString());
        }
    }

    private static void check(final Path tar, final String which) throws IOException {
        final Map<String, byte[]> files = new HashMap<>();
        try (InputStream in = Files.newInputStream(tar)) {
            readTar(in, (name, mode, data) -> files.put(name, data));
        }
        assertTrue(files.containsKey("oci-layout"), tar + " is not an OCI layout: " + files.keySet());
        final JsonNode index = JSON.readTree(files.get("index.json"));
        final JsonNode manifest = JSON.readTree(blob(files, index.get("manifests").get(0).get("digest").asText()));
        final JsonNode config = JSON.readTree(blob(files, manifest.get("config").get("digest").asText()));
        final JsonNode c = config.get("config");
        assertEquals("65532:65532", c.get("User").asText(), "non-root numeric user");
        final List<String> entrypoint = new ArrayList<>();
        c.get("Entrypoint").forEach(n -> entrypoint.add(n.asText()));
        assertEquals("java", entrypoint.getFirst(), "entrypoint " + entrypoint);
        assertTrue(entrypoint.contains("--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED"), entrypoint.toString());
        assertTrue(entrypoint.contains("--enable-native-access=ALL-UNNAMED"), entrypoint.toString());
        assertTrue(MAIN_CLASSES.containsKey(which), tar + ": an image of " + MAIN_CLASSES.keySet());
        assertEquals(MAIN_CLASSES.get(which), entrypoint.getLast(), "main class");
        final List<String> env = new ArrayList<>();
        c.get("Env").forEach(n -> env.add(n.asText()));
        assertTrue(env.stream().anyMatch(e -> e.startsWith("PATH=/opt/java/openjdk/bin:")), env.toString());
        assertTrue(c.get("Volumes").has("/dev/shm/kvidx") && c.get("Volumes").has("/tmp"), c.get("Volumes").toString());

        final Map<String, Integer> modes = new HashMap<>();
        final Map<String, Long> layerSizes = new LinkedHashMap<>();
        for (final JsonNode layer : manifest.get("layers")) {
            final byte[] gz = blob(files, layer.get("digest").asText());
            final List<String> names = new ArrayList<>();
            try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(gz))) {
                readTar(in, (name, mode, data) -> {
                    final String n = "/" + name.replaceFirst("^\\./", "").replaceFirst("^/", "");
                    modes.put(n, mode);
                    names.add(n);
                });
            }
            layerSizes.put(names.stream().filter(n -> !n.endsWith("/")).limit(2).toList() + " ... "
                + names.size() + " entries", (long) gz.length);
        }
        System.out.printf("%s: %d layers%n", tar, layerSizes.size());
        layerSizes.forEach((k, v) -> System.out.printf("  %,12d bytes  %s%n", v, k));
        assertExecutable(modes, "/opt/java/openjdk/bin/java");
        assertTrue(modes.containsKey("/opt/java/openjdk/lib/modules"), "the jlink runtime");
        assertTrue(modes.containsKey("/lib64/ld-linux-x86-64.so.2"), "glibc's loader");
        assertTrue(modes.containsKey("/lib/x86_64-linux-gnu/libc.so.6"), "libc");
        assertTrue(modes.containsKey("/etc/passwd"), "passwd naming uid 65532");
        assertTrue(modes.containsKey("/app/jib-classpath-file"), "Jib's class path file");
        assertTrue(modes.keySet().stream().anyMatch(n -> n.matches("/app/libs/kvidx-" + which + "-.*\\.jar")),
            "the kvidx-" + which + " jar");
        if (which.equals("router") || which.equals("epp")) {
            assertTrue(modes.containsKey("/lib/x86_64-linux-gnu/libstdc++.so.6"), "libstdc++ for libtokenizers.so");
            assertTrue(modes.containsKey("/lib/x86_64-linux-gnu/libgcc_s.so.1"), "libgcc_s for libtokenizers.so");
            assertTrue(modes.keySet().stream().anyMatch(n -> n.matches("/app/libs/tokenizers-.*\\.jar")), "DJL");
            assertTrue(entrypoint.contains("-Dai.djl.offline=true"), entrypoint.toString());
            assertTrue(env.contains("ENGINE_CACHE_DIR=/tmp/djl"), "DJL extracts under /tmp: " + env);
        }
        if (which.equals("epp")) {
            assertTrue(modes.keySet().stream().anyMatch(n -> n.matches("/app/libs/kvidx-router-.*\\.jar")),
                "the router's configuration and decision layer");
            assertTrue(modes.keySet().stream().anyMatch(n -> n.matches("/app/libs/grpc-netty-shaded-.*\\.jar")),
                "grpc-netty-shaded (its epoll library extracts under /tmp)");
            assertTrue(modes.keySet().stream().anyMatch(n -> n.matches("/app/libs/guava-.*-jre\\.jar")),
                "Guava's jre flavour (the chat template's jinjava fails on the android one)");
            assertTrue(modes.keySet().stream().noneMatch(n -> n.matches("/app/libs/guava-.*-android\\.jar")),
                "no android Guava beside it");
            assertTrue(modes.keySet().stream().noneMatch(n -> n.matches("/app/libs/kvidx-daemon-.*\\.jar")),
                "the picker carries no daemon");
        }
    }

    private static void assertExecutable(final Map<String, Integer> modes, final String path) {
        assertTrue(modes.containsKey(path), path + " is missing");
        assertEquals(0755, modes.get(path) & 0777, path + " mode " + Integer.toOctalString(modes.get(path)));
    }

    private static byte[] blob(final Map<String, byte[]> files, final String digest) {
        final byte[] b = files.get("blobs/" + digest.replace(':', '/'));
        assertTrue(b != null, "blob " + digest + " is missing");
        return b;
    }

    private interface Entry {
        void accept(String name, int mode, byte[] data) throws IOException;
    }

    /** A small ustar reader: regular files and directories, PAX ('x') and GNU ('L') long names. */
    private static void readTar(final InputStream in, final Entry entry) throws IOException {
        String longName = null;
        while (true) {
            final byte[] h = in.readNBytes(512);
            if (h.length < 512 || h[0] == 0) {
                return;
            }
            String name = field(h, 0, 100);
            final String prefix = field(h, 345, 155);
            if (!prefix.isEmpty() && h[257] == 'u') {
                name = prefix + "/" + name;
            }
            final int mode = (int) octal(h, 100, 8);
            final long size = octal(h, 124, 12);
            final char type = (char) h[156];
            final byte[] data = in.readNBytes((int) size);
            in.readNBytes((int) ((512 - size % 512) % 512));
            if (type == 'x' || type == 'L') {
                final String text = new String(data, StandardCharsets.UTF_8);
                if (type == 'L') {
                    longName = text.replace("\0", "");
                } else {
                    for (final String rec : text.split("\n")) {
                        final int eq = rec.indexOf(" path=");
                        if (eq >= 0) {
                            longName = rec.substring(eq + 6);
                        }
                    }
                }
                continue;
            }
            if (longName != null) {
                name = longName;
                longName = null;
            }
            if (type == '0' || type == 0 || type == '5' || type == '2') {
                entry.accept(name, mode, data);
            }
        }
    }

    private static String field(final byte[] h, final int off, final int len) {
        int end = off;
        while (end < off + len && h[end] != 0) {
            end++;
        }
        return new String(h, off, end - off, StandardCharsets.UTF_8);
    }

    private static long octal(final byte[] h, final int off, final int len) {
        final String s = field(h, off, len).trim();
        return s.isEmpty() ? 0 : Long.parseLong(s, 8);
    }
}
