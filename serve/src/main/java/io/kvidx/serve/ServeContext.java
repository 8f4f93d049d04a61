package io.kvidx.serve;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * What a server built on this layer is told: where it listens, its event loops and how they idle, and the bounds of
 * an HTTP/1.1 connection. Fluent setters; the defaults are the {@code *_DEFAULT} constants. Nothing here reads a
 * system property: each server maps its own options onto a context.
 *
 * <p><b>Note:</b> not thread safe while being built; read-only once {@link #conclude()}d.
 */
public final class ServeContext {
    /** Default event-loop threads. */
    public static final int THREADS_DEFAULT = 2;
    /** Default event-loop thread name prefix. */
    public static final String THREAD_NAME_DEFAULT = "kvidx-http";
    /** Default seconds a connection with nothing in flight may stay silent before it is closed. */
    public static final int IDLE_TIMEOUT_S_DEFAULT = 60;
    /** Default longest request line. */
    public static final int MAX_INITIAL_LINE_BYTES_DEFAULT = 4096;
    /** Default largest header block. */
    public static final int MAX_HEADER_BYTES_DEFAULT = 8192;
    /** Default largest chunk the codec passes on at once. */
    public static final int MAX_CHUNK_BYTES_DEFAULT = 65536;
    /** Default largest request body. */
    public static final int MAX_BODY_BYTES_DEFAULT = 1 << 20;
    /** Default requests a client may pipeline ahead of its answers before the server stops reading. */
    public static final int MAX_PIPELINED_DEFAULT = 16;
    /** Default bytes queued on a connection below which it is writable again. */
    public static final int WRITE_BUFFER_LOW_BYTES_DEFAULT = 32 << 10;
    /** Default bytes queued on a connection above which it is not writable (backpressure). */
    public static final int WRITE_BUFFER_HIGH_BYTES_DEFAULT = 64 << 10;
    /** Default accept backlog. */
    public static final int BACKLOG_DEFAULT = 1024;
    /** Default connections a server keeps open at once ({@link ConnectionLimit}). */
    public static final int MAX_CONNECTIONS_DEFAULT = 4096;
    /** Default time a client may take to send one whole request, ms ({@link RequestReadDeadline}). */
    public static final int REQUEST_READ_MS_DEFAULT = 15_000;

    private InetSocketAddress listen;
    private int threads = THREADS_DEFAULT;
    private boolean busySpin;
    private String threadName = THREAD_NAME_DEFAULT;
    private int idleTimeoutS = IDLE_TIMEOUT_S_DEFAULT;
    private int maxInitialLineBytes = MAX_INITIAL_LINE_BYTES_DEFAULT;
    private int maxHeaderBytes = MAX_HEADER_BYTES_DEFAULT;
    private int maxChunkBytes = MAX_CHUNK_BYTES_DEFAULT;
    private int maxBodyBytes = MAX_BODY_BYTES_DEFAULT;
    private int maxPipelined = MAX_PIPELINED_DEFAULT;
    private int maxConnections = MAX_CONNECTIONS_DEFAULT;
    private int requestReadMs = REQUEST_READ_MS_DEFAULT;
    private BearerAuth auth;
    private ServerTls tls;

    /**
     * @param address where to listen (port 0: any free port).
     * @return this.
     */
    public ServeContext listen(final InetSocketAddress address) {
        this.listen = address;
        return this;
    }

    /**
     * @return where to listen.
     */
    public InetSocketAddress listen() {
        return listen;
    }

    /**
     * @param threads event-loop threads.
     * @return this.
     */
    public ServeContext threads(final int threads) {
        this.threads = threads;
        return this;
    }

    /**
     * @return event-loop threads.
     */
    public int threads() {
        return threads;
    }

    /**
     * @param busySpin true: the event loops poll their sockets without sleeping (a core each); false: they block in
     *                 the selector until there is work.
     * @return this.
     */
    public ServeContext busySpin(final boolean busySpin) {
        this.busySpin = busySpin;
        return this;
    }

    /**
     * @return whether the event loops spin.
     */
    public boolean busySpin() {
        return busySpin;
    }

    /**
     * @param threadName the event-loop threads' name prefix.
     * @return this.
     */
    public ServeContext threadName(final String threadName) {
        this.threadName = threadName;
        return this;
    }

    /**
     * @return the event-loop threads' name prefix.
     */
    public String threadName() {
        return threadName;
    }

    /**
     * @param seconds seconds a connection with nothing in flight may stay silent (neither read nor written) before
     *                it is closed.
     * @return this.
     */
    public ServeContext idleTimeoutS(final int seconds) {
        this.idleTimeoutS = seconds;
        return this;
    }

    /**
     * @return the idle timeout in seconds.
     */
    public int idleTimeoutS() {
        return idleTimeoutS;
    }

    /**
     * @param bytes longest request line.
     * @return this.
     */
    public ServeContext maxInitialLineBytes(final int bytes) {
        this.maxInitialLineBytes = bytes;
        return this;
    }

    /**
     * @return the longest request line.
     */
    public int maxInitialLineBytes() {
        return maxInitialLineBytes;
    }

    /**
     * @param bytes largest header block.
     * @return this.
     */
    public ServeContext maxHeaderBytes(final int bytes) {
        this.maxHeaderBytes = bytes;
        return this;
    }

    /**
     * @return the largest header block.
     */
    public int maxHeaderBytes() {
        return maxHeaderBytes;
    }

    /**
     * @param bytes largest chunk the codec passes on at once.
     * @return this.
     */
    public ServeContext maxChunkBytes(final int bytes) {
        this.maxChunkBytes = bytes;
        return this;
    }

    /**
     * @return the largest chunk.
     */
    public int maxChunkBytes() {
        return maxChunkBytes;
    }

    /**
     * @param bytes largest request body (413 beyond, from the server's handler).
     * @return this.
     */
    public ServeContext maxBodyBytes(final int bytes) {
        this.maxBodyBytes = bytes;
        return this;
    }

    /**
     * @return the largest request body.
     */
    public int maxBodyBytes() {
        return maxBodyBytes;
    }

    /**
     * @param requests requests a client may pipeline ahead of its answers before reading stops.
     * @return this.
     */
    public ServeContext maxPipelined(final int requests) {
        this.maxPipelined = requests;
        return this;
    }

    /**
     * @return the pipelining bound.
     */
    public int maxPipelined() {
        return maxPipelined;
    }

    /**
     * @param connections connections open at once; one more is closed at accept.
     * @return this.
     */
    public ServeContext maxConnections(final int connections) {
        this.maxConnections = connections;
        return this;
    }

    /**
     * @return the connection bound.
     */
    public int maxConnections() {
        return maxConnections;
    }

    /**
     * @param ms time a client may take to send one whole request (headers and body); its connection is closed after.
     * @return this.
     */
    public ServeContext requestReadMs(final int ms) {
        this.requestReadMs = ms;
        return this;
    }

    /**
     * @return the request read deadline, ms.
     */
    public int requestReadMs() {
        return requestReadMs;
    }

    /**
     * @param auth the bearer-token check every request passes, or null for none.
     * @return this.
     */
    public ServeContext auth(final BearerAuth auth) {
        this.auth = auth;
        return this;
    }

    /**
     * @return the bearer-token check, or null.
     */
    public BearerAuth auth() {
        return auth;
    }

    /**
     * @param serverTls TLS (optionally mutual) on every connection, or null for plain HTTP.
     * @return this.
     */
    public ServeContext tls(final ServerTls serverTls) {
        this.tls = serverTls;
        return this;
    }

    /**
     * @return the connections' TLS, or null.
     */
    public ServerTls tls() {
        return tls;
    }

    /**
     * Validates.
     *
     * @return this.
     * @throws IllegalArgumentException naming the first bad value.
     */
    public ServeContext conclude() {
        Objects.requireNonNull(listen, "listen");
        Objects.requireNonNull(threadName, "threadName");
        positive("threads", threads);
        positive("idleTimeoutS", idleTimeoutS);
        positive("maxInitialLineBytes", maxInitialLineBytes);
        positive("maxHeaderBytes", maxHeaderBytes);
        positive("maxChunkBytes", maxChunkBytes);
        positive("maxBodyBytes", maxBodyBytes);
        positive("maxPipelined", maxPipelined);
        positive("maxConnections", maxConnections);
        positive("requestReadMs", requestReadMs);
        return this;
    }

    private static void positive(final String name, final int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive: " + value);
        }
    }
}
