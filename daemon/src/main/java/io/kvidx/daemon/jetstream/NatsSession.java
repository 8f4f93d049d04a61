package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.JetStreamSettings;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestErrors;
import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.ErrorListener;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.ObjectStore;
import io.nats.client.Options;
import io.nats.client.api.DiscardPolicy;
import io.nats.client.api.ObjectStoreConfiguration;
import io.nats.client.api.RetentionPolicy;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.api.StreamInfo;
import org.agrona.concurrent.status.AtomicCounter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * One daemon's connection to NATS (ADR 0024): the servers and credentials of {@link JetStreamSettings}, reconnecting
 * for ever once connected (every disconnection and error counted in {@code jetstream errors} and the error log), and
 * the stream and snapshot bucket, created with the configured retention when absent.
 *
 * <p><b>Note:</b> opened and closed by the thread that starts the daemon; the connection itself is thread safe.
 */
public final class NatsSession implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NatsSession.class);
    /** Bound on the first connection; a daemon that cannot reach NATS at start fails with a clear message. */
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration RECONNECT_WAIT = Duration.ofMillis(250);
    /** What the client buffers while reconnecting; a relay's publisher bounds what it keeps beyond. */
    private static final long RECONNECT_BUFFER_BYTES = 8L << 20;

    private final JetStreamSettings settings;
    private final Connection connection;
    private final JetStream jetStream;
    private final JetStreamManagement management;
    /** Connections made after the first (reconnections), for a relay's resend; written by the client's thread. */
    private final java.util.concurrent.atomic.AtomicLong reconnections;

    private NatsSession(final JetStreamSettings settings, final Connection connection,
        final java.util.concurrent.atomic.AtomicLong reconnections) throws IOException {
        this.reconnections = reconnections;
        this.settings = settings;
        this.connection = connection;
        this.jetStream = connection.jetStream();
        this.management = connection.jetStreamManagement();
    }

    /**
     * Connects.
     *
     * @param settings the servers, credentials, stream and bucket.
     * @param name     the connection's name (seen in the server's monitoring).
     * @param errors   error log.
     * @param natsErrors the {@code jetstream errors} counter.
     * @return the session.
     * @throws IllegalStateException when no server can be reached in time or a credentials file cannot be read.
     */
    public static NatsSession connect(final JetStreamSettings settings, final String name, final IngestErrors errors,
        final AtomicCounter natsErrors) {
        final java.util.concurrent.atomic.AtomicLong reconnections = new java.util.concurrent.atomic.AtomicLong();
        final Options.Builder options = Options.builder()
            .servers(settings.servers().toArray(new String[0]))
            .connectionName(name)
            .connectionTimeout(CONNECT_TIMEOUT)
            .maxReconnects(-1)
            .reconnectWait(RECONNECT_WAIT)
            // A relay buffers nothing in the client while disconnected: a publish then fails, and the relay resends
            // in order after the reconnection, so no later message reaches the stream before an earlier one lost
            // in the broken connection (StreamRelay).
            .reconnectBufferSize(settings.relay() ? 0 : RECONNECT_BUFFER_BYTES)
            .errorListener(new ErrorListener() {
                @Override
                public void errorOccurred(final Connection conn, final String error) {
                    natsErrors.increment();
                    errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -1, () -> "NATS: " + error);
                }

                @Override
                public void exceptionOccurred(final Connection conn, final Exception exp) {
                    natsErrors.increment();
                    errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -2, () -> "NATS: " + exp);
                }
            })
            .connectionListener((conn, event) -> {
                if (event == ConnectionListener.Events.RECONNECTED) {
                    reconnections.incrementAndGet();
                }
                if (event == ConnectionListener.Events.DISCONNECTED) {
                    natsErrors.increment();
                    errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -3, () -> "NATS connection lost; "
                        + "reconnecting to " + settings.url());
                }
                LOG.info("NATS connection {}: {}", name, event.getEvent());
            });
        try {
            if (settings.tlsCaFile() != null || settings.tlsCertFile() != null) {
                options.sslContext(tlsContext(settings));
            }
            if (settings.credsFile() != null) {
                options.authHandler(Nats.credentials(settings.credsFile()));
            } else if (settings.nkeyFile() != null) {
                options.authHandler(Nats.staticCredentials(null, readSecret(settings.nkeyFile())));
            } else if (settings.tokenFile() != null) {
                options.token(readSecret(settings.tokenFile()));
            } else if (settings.user() != null) {
                options.userInfo(settings.user().toCharArray(), readSecret(settings.passwordFile()));
            }
            return new NatsSession(settings, Nats.connect(options.build()), reconnections);
        } catch (final IOException ex) {
            throw new IllegalStateException("cannot connect to NATS at " + settings.url() + ": " + ex.getMessage(),
                ex);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while connecting to NATS at " + settings.url(), ex);
        }
    }

    /**
     * The client's TLS context: trusting only the PEM certificates of {@code tlsCaFile} (else the JVM's trust store),
     * presenting the PEM certificate and PKCS#8 key of {@code tlsCertFile} / {@code tlsKeyFile} when given (mutual
     * TLS). The PEM files are read by Netty's {@code SslContextBuilder}, as the HTTP API's ({@code ServerTls}).
     */
    private static javax.net.ssl.SSLContext tlsContext(final JetStreamSettings settings) throws IOException {
        final io.netty.handler.ssl.SslContextBuilder builder = io.netty.handler.ssl.SslContextBuilder.forClient()
            .sslProvider(io.netty.handler.ssl.SslProvider.JDK);
        try {
            if (settings.tlsCaFile() != null) {
                builder.trustManager(Path.of(settings.tlsCaFile()).toFile());
            }
            if (settings.tlsCertFile() != null) {
                builder.keyManager(Path.of(settings.tlsCertFile()).toFile(), Path.of(settings.tlsKeyFile()).toFile());
            }
            return ((io.netty.handler.ssl.JdkSslContext) builder.build()).context();
        } catch (final javax.net.ssl.SSLException | IllegalArgumentException ex) {
            throw new IOException("cannot read the TLS files (" + (settings.tlsCaFile() == null ? ""
                : settings.tlsCaFile() + " ") + (settings.tlsCertFile() == null ? "" : settings.tlsCertFile() + " "
                + settings.tlsKeyFile()) + "): " + ex.getMessage(), ex);
        }
    }

    private static char[] readSecret(final String file) throws IOException {
        return Files.readString(Path.of(file), StandardCharsets.UTF_8).strip().toCharArray();
    }

    /**
     * The stream, created when absent (file storage, limits retention, the configured age, size and duplicate
     * window, old messages discarded first); an existing stream is used as it is and its differences logged.
     *
     * @return the stream's info now.
     * @throws IllegalStateException when it cannot be read or created.
     */
    public StreamInfo ensureStream() {
        final String filter = StreamSubjects.filter(settings.subjectPrefix());
        try {
            final StreamInfo info = management.getStreamInfo(settings.stream());
            final StreamConfiguration c = info.getConfiguration();
            if (!c.getSubjects().contains(filter)) {
                throw new IllegalStateException("stream " + settings.stream() + " exists with subjects "
                    + c.getSubjects() + ", not " + filter + " (set jetstream.subjectPrefix to its prefix)");
            }
            if (c.getMaxAge().toMillis() != settings.maxAgeMs() || c.getMaxBytes() != settings.maxBytes()
                || c.getDuplicateWindow().toMillis() != settings.duplicateWindowMs()) {
                LOG.info("stream {} exists with max age {} ms, max bytes {}, duplicate window {} ms: used as it is",
                    settings.stream(), c.getMaxAge().toMillis(), c.getMaxBytes(), c.getDuplicateWindow().toMillis());
            }
            return info;
        } catch (final JetStreamApiException ex) {
            if (ex.getApiErrorCode() != STREAM_NOT_FOUND) {
                throw new IllegalStateException("cannot read stream " + settings.stream() + ": " + ex.getMessage(),
                    ex);
            }
        } catch (final IOException ex) {
            throw new IllegalStateException("cannot read stream " + settings.stream() + ": " + ex.getMessage(), ex);
        }
        try {
            final StreamInfo created = management.addStream(StreamConfiguration.builder()
                .name(settings.stream())
                .description("kvidx KV-cache block events (ADR 0024)")
                .subjects(filter)
                .storageType(StorageType.File)
                .retentionPolicy(RetentionPolicy.Limits)
                .discardPolicy(DiscardPolicy.Old)
                .maxAge(Duration.ofMillis(settings.maxAgeMs()))
                .maxBytes(settings.maxBytes())
                .duplicateWindow(Duration.ofMillis(settings.duplicateWindowMs()))
                .build());
            LOG.info("created stream {} ({}; max age {} ms, max bytes {}, duplicate window {} ms)", settings.stream(),
                filter, settings.maxAgeMs(), settings.maxBytes(), settings.duplicateWindowMs());
            return created;
        } catch (final IOException | JetStreamApiException ex) {
            throw new IllegalStateException("cannot create stream " + settings.stream() + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * The snapshot bucket, created when absent (file storage, the configured age and size).
     *
     * @return the bucket.
     * @throws IllegalStateException when it cannot be read or created.
     */
    public ObjectStore ensureBucket() {
        try {
            if (!connection.objectStoreManagement().getBucketNames().contains(settings.bucket())) {
                connection.objectStoreManagement().create(ObjectStoreConfiguration.builder(settings.bucket())
                    .description("kvidx index snapshots (ADR 0024)")
                    .storageType(StorageType.File)
                    .maxBucketSize(settings.maxBytes())
                    .build());
                LOG.info("created object store bucket {}", settings.bucket());
            }
            return connection.objectStore(settings.bucket());
        } catch (final IOException | JetStreamApiException ex) {
            throw new IllegalStateException("cannot open object store bucket " + settings.bucket() + ": "
                + ex.getMessage(), ex);
        }
    }

    /**
     * The relays' lease bucket (a KV bucket whose TTL is {@code jetstream.leaseTtlMs}, one revision per key), created
     * when absent. An existing bucket of another TTL is refused: a holder's timing must be the bucket's.
     *
     * @return the bucket.
     * @throws IllegalStateException when it cannot be read or created, or has another TTL.
     */
    public io.nats.client.KeyValue ensureLeaseBucket() {
        final String name = settings.leaseBucket();
        try {
            final io.nats.client.KeyValueManagement kvm = connection.keyValueManagement();
            if (!kvm.getBucketNames().contains(name)) {
                kvm.create(io.nats.client.api.KeyValueConfiguration.builder()
                    .name(name)
                    .description("kvidx relay leases, one per pod (ADR 0024)")
                    .storageType(StorageType.File)
                    .maxHistoryPerKey(1)
                    .ttl(Duration.ofMillis(settings.leaseTtlMs()))
                    .build());
                LOG.info("created KV bucket {} (TTL {} ms)", name, settings.leaseTtlMs());
            } else {
                final Duration ttl = kvm.getStatus(name).getTtl();
                if (ttl == null || ttl.toMillis() != settings.leaseTtlMs()) {
                    throw new IllegalStateException("KV bucket " + name + " exists with TTL " + ttl + ", not "
                        + settings.leaseTtlMs() + " ms: give every relay its jetstream.leaseTtlMs");
                }
            }
            return connection.keyValue(name);
        } catch (final IOException | JetStreamApiException ex) {
            throw new IllegalStateException("cannot open KV bucket " + name + ": " + ex.getMessage(), ex);
        }
    }

    /** JetStream's API error code of a stream that does not exist. */
    static final int STREAM_NOT_FOUND = 10059;

    /**
     * @return how many times the connection was made again since it was opened.
     */
    public long reconnections() {
        return reconnections.get();
    }

    /**
     * @return true while the connection is up.
     */
    public boolean connected() {
        return connection.getStatus() == Connection.Status.CONNECTED;
    }

    /**
     * @return the settings.
     */
    public JetStreamSettings settings() {
        return settings;
    }

    /**
     * @return the connection.
     */
    public Connection connection() {
        return connection;
    }

    /**
     * @return the JetStream context (publishing).
     */
    public JetStream jetStream() {
        return jetStream;
    }

    /**
     * @return the JetStream management context (stream info).
     */
    public JetStreamManagement management() {
        return management;
    }

    @Override
    public void close() {
        try {
            connection.close();
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
