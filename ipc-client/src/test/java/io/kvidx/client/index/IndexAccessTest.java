package io.kvidx.client.index;

import io.kvidx.client.routing.IndexReaderPodIndex;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * A router that may not read the index is told which file and what to do, not handed a raw
 * {@link java.nio.file.AccessDeniedException}.
 */
@Timeout(30)
class IndexAccessTest {
    @TempDir
    Path dir;

    @Test
    void shouldNameTheFileAndTheFixWhenTheIndexIsNotReadable() throws IOException {
        final Path file = IndexConfiguration.indexFile(dir, "locked");
        Files.createDirectories(file.getParent());
        Files.write(file, new byte[IndexDescriptor.HEADER_LENGTH]);
        Files.setPosixFilePermissions(file, EnumSet.noneOf(PosixFilePermission.class));
        try {
            assumeFalse(Files.isReadable(file), "running as root (or with CAP_DAC_OVERRIDE): a mode-000 file stays "
                + "readable, so the permission check cannot fail here");
            final IndexReader.Context context = new IndexReader.Context().dir(dir).cell("locked").attachTimeoutMs(0);
            final IndexAccessDeniedException ex = assertThrows(IndexAccessDeniedException.class,
                () -> IndexReader.attach(context));
            assertTrue(ex.getMessage().contains(file.toString()), ex.getMessage());
            assertTrue(ex.getMessage().contains("add the router's user to the daemon's group, see tuning/README.md"),
                ex.getMessage());
            assertTrue(ex.getMessage().contains(System.getProperty("user.name")), ex.getMessage());
            assertInstanceOf(java.nio.file.AccessDeniedException.class, ex.getCause());

            try (IndexReaderPodIndex index = new IndexReaderPodIndex(context, 0)) {
                assertFalse(index.isAvailable());
                assertInstanceOf(IndexAccessDeniedException.class, index.attachFailure(),
                    "a router can tell why it falls back");
            }
        } finally {
            Files.setPosixFilePermissions(file, EnumSet.of(PosixFilePermission.OWNER_READ,
                PosixFilePermission.OWNER_WRITE));
        }
        assertEquals(IndexDescriptor.HEADER_LENGTH, Files.size(file));
    }
}
