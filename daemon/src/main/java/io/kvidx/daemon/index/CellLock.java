package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.ffm.SharedFiles;
import org.agrona.CloseHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * One writer per cell: an exclusive OS lock on {@code <dir>/<cell>/writer.lock} ({@link FileChannel#tryLock()}, an
 * {@code fcntl} record lock on Linux), held for the daemon's whole life, with the holder's pid written in the file.
 *
 * <p>Every writer of a cell holds it: {@code IndexWriter.open} and {@code create} take it themselves (the demo, the
 * benchmarks) and release it on close, unless handed one already held; the daemon takes it before anything else of
 * the cell (the Aeron directory, the index file) and hands it to its writer. A second writer for the same directory
 * and cell fails {@link #acquire} at once with a {@link CellLockedException} naming the holder's pid, having changed
 * nothing (except a lock file wider than {@code 0600}, which is tightened before the lock is
 * tried, see below). The kernel drops the lock when the holding process dies, even by {@code kill -9}, so the next
 * daemon takes over without any cleanup. The file itself stays when the lock is released: only a held lock means
 * something, and deleting the file would let a daemon that opened it just before lock an orphan while the next one
 * locks a new file.
 *
 * <p>The file is private ({@code 0600}): any process that can open a file can lock it, so a reader able to open it
 * could keep the daemon from starting.
 *
 * <p>A record lock belongs to the process, and closing any descriptor of the file drops it. So the lock file's mode
 * is set before locking (setting it opens and closes a second descriptor), never while the lock is held. And while
 * the JVM refuses a second lock of a file it already locked ({@link OverlappingFileLockException}), the descriptor
 * opened to try it would, once closed, drop the first lock: this class therefore keeps its own set of the cells
 * locked in this JVM, so that a second daemon in the same JVM (tests) is refused before it opens the file at all.
 * Both refusals give the same {@link CellLockedException}.
 *
 * <p><b>Note:</b> acquire and close from one thread.
 */
public final class CellLock implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CellLock.class);

    /** Name of the lock file in the cell directory. */
    public static final String LOCK_FILE_NAME = "writer.lock";

    private static final Set<Object> LOCKED_IN_THIS_JVM = ConcurrentHashMap.newKeySet();
    private static final int PID_READ_ATTEMPTS = 20;
    private static final long PID_READ_PAUSE_NS = 5_000_000L;
    private static final int PID_MAX_DIGITS = 18;
    private static final int PID_MAX_LENGTH = PID_MAX_DIGITS + 1;

    private final Path file;
    private final Object cellDirectoryKey;
    private final FileChannel channel;
    private final FileLock lock;
    private boolean closed;

    private CellLock(final Path file, final Object cellDirectoryKey, final FileChannel channel, final FileLock lock) {
        this.file = file;
        this.cellDirectoryKey = cellDirectoryKey;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Takes a cell's lock without waiting. Creates the cell directory when missing; once the lock is held, writes
     * this process's pid into the lock file, sets the cell directory's mode (0750) and group, and warns (one line on
     * {@code log}) when the directory's parent is world-writable without the sticky bit.
     *
     * @param dir   index directory.
     * @param cell  cell name.
     * @param files modes and group of the cell directory.
     * @param log   where the warning goes (null: nowhere).
     * @return the held lock; close it last.
     * @throws CellLockedException when another writer, in this JVM or another process, holds it.
     * @throws UncheckedIOException when the cell directory or the lock file cannot be used (a symbolic link, another
     *                              user's, a group the user is not a member of, ...).
     */
    public static CellLock acquire(final Path dir, final String cell, final SharedFiles files) {
        final Path cellDirectory = IndexConfiguration.indexFile(dir, cell).getParent();
        final Path file = cellDirectory.resolve(LOCK_FILE_NAME);
        try (SharedFiles.Directory directory = files.openDirectory(cellDirectory)) {
            final Object key = directory.fileKey();
            if (!LOCKED_IN_THIS_JVM.add(key)) {
                throw new CellLockedException(cell, file, ProcessHandle.current().pid());
            }
            FileChannel channel = null;
            try {
                channel = directory.openPrivateFile(LOCK_FILE_NAME);
                final FileLock lock = tryLock(channel);
                if (lock == null) {
                    throw new CellLockedException(cell, file, readPid(channel));
                }
                writePid(channel, ProcessHandle.current().pid());
                directory.enforcePermissions();
                final String warning = SharedFiles.unsafeParentWarning(cellDirectory);
                if (warning != null) {
                    LOG.warn(warning);
                }
                return new CellLock(file, key, channel, lock);
            } catch (final IOException | RuntimeException ex) {
                CloseHelper.quietClose(channel);
                LOCKED_IN_THIS_JVM.remove(key);
                throw ex;
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot lock cell '" + cell + "' (" + file + "): " + ex.getMessage(), ex);
        }
    }

    private static FileLock tryLock(final FileChannel channel) throws IOException {
        try {
            return channel.tryLock();
        } catch (final OverlappingFileLockException ex) {
            return null; // this JVM holds it, locked by code that bypassed the set above
        }
    }

    /**
     * Writes the pid over the start of the file, then cuts the file after it: a reader never sees an empty file,
     * only the old pid or the new one, each ending in a newline.
     */
    private static void writePid(final FileChannel channel, final long pid) throws IOException {
        final ByteBuffer bytes = ByteBuffer.wrap((pid + "\n").getBytes(StandardCharsets.US_ASCII));
        while (bytes.hasRemaining()) {
            channel.write(bytes, bytes.position());
        }
        channel.truncate(bytes.limit());
    }

    /**
     * Reads the holder's pid: the digits before the first newline. The holder writes it just after locking, so a
     * file still without a complete line is read again a few times.
     *
     * @return the pid, or -1 when none could be read.
     */
    private static long readPid(final FileChannel channel) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(PID_MAX_LENGTH);
        for (int attempt = 0; attempt < PID_READ_ATTEMPTS; attempt++) {
            buffer.clear();
            while (buffer.hasRemaining() && channel.read(buffer, buffer.position()) > 0) {
                // Fill what the file has.
            }
            long pid = 0;
            for (int i = 0; i < buffer.position(); i++) {
                final byte b = buffer.get(i);
                if (b == '\n' && i > 0) {
                    return pid;
                }
                if (b < '0' || b > '9' || i >= PID_MAX_DIGITS) {
                    break;
                }
                pid = pid * 10 + (b - '0');
            }
            LockSupport.parkNanos(PID_READ_PAUSE_NS);
        }
        return -1;
    }

    /**
     * @return the lock file.
     */
    public Path file() {
        return file;
    }

    /**
     * Releases the lock (the file stays). Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            lock.release();
            channel.close();
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot release " + file, ex);
        } finally {
            CloseHelper.quietClose(channel);
            // Only now: a second acquire in this JVM must not open the file while this descriptor is still open.
            LOCKED_IN_THIS_JVM.remove(cellDirectoryKey);
        }
    }
}
