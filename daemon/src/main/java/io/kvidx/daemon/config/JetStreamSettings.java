package io.kvidx.daemon.config;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_BUCKET_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_CREDS_FILE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_DUPLICATE_WINDOW_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_MAX_AGE_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_MAX_BYTES_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_NKEY_FILE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_PASSWORD_FILE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_ROLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_SNAPSHOT_EVENTS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_SNAPSHOT_INTERVAL_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_STREAM_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_SUBJECT_PREFIX_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_TLS_CA_FILE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_TOKEN_FILE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_URL_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.JETSTREAM_USER_PROP_NAME;

/**
 * KV events through NATS JetStream (ADR 0024): the servers, this daemon's role (a {@code relay} publishes what its
 * transports receive; a {@code consumer} builds its index from the stream), the stream, subjects and snapshot bucket,
 * the retention a relay gives the stream it creates, how often a consumer stores a snapshot, and the credentials. Off
 * unless {@code jetstream.url} is set. Defaults from {@link DaemonConfiguration}.
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude()}.
 */
public final class JetStreamSettings {
    /** A stream or bucket name: what JetStream accepts in an API subject, and no more. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");
    /** Shortest stream retention accepted. */
    private static final long MAX_AGE_MS_MIN = 1_000;
    /** Shortest duplicate window and snapshot interval accepted. */
    private static final long WINDOW_MS_MIN = 1_000;

    private String url = DaemonConfiguration.JETSTREAM_URL_DEFAULT;
    private String role = DaemonConfiguration.JETSTREAM_ROLE_DEFAULT;
    private String stream = DaemonConfiguration.JETSTREAM_STREAM_DEFAULT;
    private String subjectPrefix = DaemonConfiguration.JETSTREAM_SUBJECT_PREFIX_DEFAULT;
    private String bucket = DaemonConfiguration.JETSTREAM_BUCKET_DEFAULT;
    private long maxAgeMs = DaemonConfiguration.JETSTREAM_MAX_AGE_MS_DEFAULT;
    private long maxBytes = DaemonConfiguration.JETSTREAM_MAX_BYTES_DEFAULT;
    private long duplicateWindowMs = DaemonConfiguration.JETSTREAM_DUPLICATE_WINDOW_MS_DEFAULT;
    private long snapshotIntervalMs = DaemonConfiguration.JETSTREAM_SNAPSHOT_INTERVAL_MS_DEFAULT;
    private long snapshotEvents = DaemonConfiguration.JETSTREAM_SNAPSHOT_EVENTS_DEFAULT;
    private boolean exitOnLoss = DaemonConfiguration.JETSTREAM_EXIT_ON_LOSS_DEFAULT;
    private long leaseTtlMs = DaemonConfiguration.JETSTREAM_LEASE_TTL_MS_DEFAULT;
    private String leaseBucket = DaemonConfiguration.JETSTREAM_LEASE_BUCKET_DEFAULT;
    private String user;
    private String passwordFile;
    private String tokenFile;
    private String credsFile;
    private String nkeyFile;
    private String tlsCaFile;
    private String tlsCertFile;
    private String tlsKeyFile;

    /**
     * Checks every value, in the order of the keys.
     *
     * @throws ConfigException naming the key of the first bad value.
     */
    void conclude() {
        if (url != null) {
            servers();
        }
        if (!DaemonConfiguration.JETSTREAM_ROLES.contains(role)) {
            throw new ConfigException(JETSTREAM_ROLE_PROP_NAME, "must be one of "
                + String.join(" or ", DaemonConfiguration.JETSTREAM_ROLES) + ": " + role);
        }
        name(JETSTREAM_STREAM_PROP_NAME, stream);
        final String prefixProblem = checkPrefix(subjectPrefix);
        if (prefixProblem != null) {
            throw new ConfigException(JETSTREAM_SUBJECT_PREFIX_PROP_NAME, prefixProblem + ": " + subjectPrefix);
        }
        name(JETSTREAM_BUCKET_PROP_NAME, bucket);
        ConfigException.range(JETSTREAM_MAX_AGE_MS_PROP_NAME, maxAgeMs, MAX_AGE_MS_MIN, Long.MAX_VALUE / 1_000_000);
        ConfigException.range(JETSTREAM_MAX_BYTES_PROP_NAME, maxBytes, DaemonConfiguration.JETSTREAM_MAX_BYTES_MIN,
            Long.MAX_VALUE);
        ConfigException.range(JETSTREAM_DUPLICATE_WINDOW_MS_PROP_NAME, duplicateWindowMs, WINDOW_MS_MIN, maxAgeMs);
        if (snapshotIntervalMs != 0) {
            ConfigException.range(JETSTREAM_SNAPSHOT_INTERVAL_MS_PROP_NAME, snapshotIntervalMs, WINDOW_MS_MIN,
                Long.MAX_VALUE);
        }
        ConfigException.range(JETSTREAM_SNAPSHOT_EVENTS_PROP_NAME, snapshotEvents, 1, Long.MAX_VALUE);
        if (leaseTtlMs != 0) {
            ConfigException.range(DaemonConfiguration.JETSTREAM_LEASE_TTL_MS_PROP_NAME, leaseTtlMs,
                DaemonConfiguration.JETSTREAM_LEASE_TTL_MS_MIN, Long.MAX_VALUE / 1_000_000);
        }
        name(DaemonConfiguration.JETSTREAM_LEASE_BUCKET_PROP_NAME, leaseBucket);
        if (passwordFile != null && user == null) {
            throw new ConfigException(JETSTREAM_PASSWORD_FILE_PROP_NAME, "needs " + JETSTREAM_USER_PROP_NAME);
        }
        if (user != null && passwordFile == null) {
            throw new ConfigException(JETSTREAM_USER_PROP_NAME, "needs " + JETSTREAM_PASSWORD_FILE_PROP_NAME);
        }
        if ((user != null ? 1 : 0) + (tokenFile != null ? 1 : 0) + (credsFile != null ? 1 : 0)
            + (nkeyFile != null ? 1 : 0) > 1) {
            throw new ConfigException(user != null ? JETSTREAM_USER_PROP_NAME : tokenFile != null
                ? JETSTREAM_TOKEN_FILE_PROP_NAME : JETSTREAM_CREDS_FILE_PROP_NAME, "one of " + JETSTREAM_USER_PROP_NAME
                + ", " + JETSTREAM_TOKEN_FILE_PROP_NAME + ", " + JETSTREAM_CREDS_FILE_PROP_NAME + " and "
                + JETSTREAM_NKEY_FILE_PROP_NAME + " at most");
        }
        if (tlsCaFile != null && url != null && !servers().stream().allMatch(s -> s.startsWith("tls://"))) {
            throw new ConfigException(JETSTREAM_TLS_CA_FILE_PROP_NAME, "needs tls:// URLs in "
                + DaemonConfiguration.JETSTREAM_URL_PROP_NAME + ": " + url);
        }
        if ((tlsCertFile == null) != (tlsKeyFile == null)) {
            throw new ConfigException(tlsCertFile == null ? DaemonConfiguration.JETSTREAM_TLS_KEY_FILE_PROP_NAME
                : DaemonConfiguration.JETSTREAM_TLS_CERT_FILE_PROP_NAME, "needs "
                + (tlsCertFile == null ? DaemonConfiguration.JETSTREAM_TLS_CERT_FILE_PROP_NAME
                : DaemonConfiguration.JETSTREAM_TLS_KEY_FILE_PROP_NAME));
        }
        if (tlsCertFile != null && url != null && !servers().stream().allMatch(s -> s.startsWith("tls://"))) {
            throw new ConfigException(DaemonConfiguration.JETSTREAM_TLS_CERT_FILE_PROP_NAME, "needs tls:// URLs in "
                + DaemonConfiguration.JETSTREAM_URL_PROP_NAME + ": " + url);
        }
    }

    /**
     * @param prefix a subject prefix.
     * @return null when it is one or more dot-separated tokens of {@code A-Z a-z 0-9 - _} (what the relay's subject
     * encoding keeps as it is), else the problem.
     */
    static String checkPrefix(final String prefix) {
        if (prefix == null || prefix.isEmpty()) {
            return "must not be empty";
        }
        for (final String part : prefix.split("\\.", -1)) {
            if (part.isEmpty()) {
                return "must be dot-separated tokens, none empty";
            }
            if (!TOKEN.matcher(part).matches()) {
                return "must hold only A-Z a-z 0-9 - _ and dots between tokens";
            }
        }
        return null;
    }

    private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9_-]+");

    private static void name(final String key, final String value) {
        if (value == null || !NAME.matcher(value).matches()) {
            throw new ConfigException(key, "must be 1 to 64 of A-Z a-z 0-9 _ -: " + value);
        }
    }

    /**
     * @return the servers' URLs ({@code jetstream.url} split at commas), empty when JetStream is off.
     * @throws ConfigException when one is not a {@code nats://} or {@code tls://} URL with a host and port.
     */
    public List<String> servers() {
        final List<String> servers = new ArrayList<>();
        if (url == null) {
            return servers;
        }
        for (final String part : url.split(",", -1)) {
            final String s = part.strip();
            final java.net.URI uri;
            try {
                uri = new java.net.URI(s);
            } catch (final java.net.URISyntaxException ex) {
                throw new ConfigException(JETSTREAM_URL_PROP_NAME, "must be nats://HOST:PORT or tls://HOST:PORT "
                    + "(comma-separated for several servers): " + url);
            }
            if (!("nats".equals(uri.getScheme()) || "tls".equals(uri.getScheme())) || uri.getHost() == null
                || uri.getPort() < 1 || uri.getUserInfo() != null) {
                throw new ConfigException(JETSTREAM_URL_PROP_NAME, "must be nats://HOST:PORT or tls://HOST:PORT "
                    + "(comma-separated for several servers; credentials in their own keys): " + url);
            }
            servers.add(s);
        }
        return servers;
    }

    /**
     * @return true when JetStream is on.
     */
    public boolean enabled() {
        return url != null;
    }

    /**
     * @return true when JetStream is on and this daemon relays (publishes) rather than consumes.
     */
    public boolean relay() {
        return url != null && "relay".equals(role);
    }

    /**
     * @return true when JetStream is on and this daemon consumes the stream.
     */
    public boolean consumer() {
        return url != null && !"relay".equals(role);
    }

    /**
     * @param urls the NATS servers, comma-separated; null for no JetStream.
     * @return this.
     */
    public JetStreamSettings url(final String urls) {
        this.url = urls;
        return this;
    }

    /**
     * @return the NATS servers as configured, or null.
     */
    public String url() {
        return url;
    }

    /**
     * @param r {@code consumer} or {@code relay}.
     * @return this.
     */
    public JetStreamSettings role(final String r) {
        this.role = r;
        return this;
    }

    /**
     * @return the role.
     */
    public String role() {
        return role;
    }

    /**
     * @param name the stream's name.
     * @return this.
     */
    public JetStreamSettings stream(final String name) {
        this.stream = name;
        return this;
    }

    /**
     * @return the stream's name.
     */
    public String stream() {
        return stream;
    }

    /**
     * @param prefix the subject prefix.
     * @return this.
     */
    public JetStreamSettings subjectPrefix(final String prefix) {
        this.subjectPrefix = prefix;
        return this;
    }

    /**
     * @return the subject prefix.
     */
    public String subjectPrefix() {
        return subjectPrefix;
    }

    /**
     * @param name the object store bucket of the snapshots.
     * @return this.
     */
    public JetStreamSettings bucket(final String name) {
        this.bucket = name;
        return this;
    }

    /**
     * @return the snapshot bucket.
     */
    public String bucket() {
        return bucket;
    }

    /**
     * @param ms retention by age of a stream (and bucket) this daemon creates.
     * @return this.
     */
    public JetStreamSettings maxAgeMs(final long ms) {
        this.maxAgeMs = ms;
        return this;
    }

    /**
     * @return retention by age.
     */
    public long maxAgeMs() {
        return maxAgeMs;
    }

    /**
     * @param bytes retention by size of a stream (and bucket) this daemon creates.
     * @return this.
     */
    public JetStreamSettings maxBytes(final long bytes) {
        this.maxBytes = bytes;
        return this;
    }

    /**
     * @return retention by size.
     */
    public long maxBytes() {
        return maxBytes;
    }

    /**
     * @param ms how long a stream this daemon creates remembers message ids.
     * @return this.
     */
    public JetStreamSettings duplicateWindowMs(final long ms) {
        this.duplicateWindowMs = ms;
        return this;
    }

    /**
     * @return the duplicate window.
     */
    public long duplicateWindowMs() {
        return duplicateWindowMs;
    }

    /**
     * @param ms how often a consumer considers storing a snapshot; 0: never.
     * @return this.
     */
    public JetStreamSettings snapshotIntervalMs(final long ms) {
        this.snapshotIntervalMs = ms;
        return this;
    }

    /**
     * @return the snapshot interval (0: none stored).
     */
    public long snapshotIntervalMs() {
        return snapshotIntervalMs;
    }

    /**
     * @param events events applied after which a consumer considers storing a snapshot before the interval.
     * @return this.
     */
    public JetStreamSettings snapshotEvents(final long events) {
        this.snapshotEvents = events;
        return this;
    }

    /**
     * @return the snapshot event count.
     */
    public long snapshotEvents() {
        return snapshotEvents;
    }

    /**
     * @param exit true: a consumer that finds stream messages lost while running marks its cell for a new index and
     *             stops the daemon, whose restart loads the newest snapshot; false: it only reports the loss.
     * @return this.
     */
    public JetStreamSettings exitOnLoss(final boolean exit) {
        this.exitOnLoss = exit;
        return this;
    }

    /**
     * @return whether a loss found while running stops the daemon for a restart from the newest snapshot.
     */
    public boolean exitOnLoss() {
        return exitOnLoss;
    }

    /**
     * @param ms a relay's lease TTL: only the holder of a pod's lease publishes the pod; 0: no leases.
     * @return this.
     */
    public JetStreamSettings leaseTtlMs(final long ms) {
        this.leaseTtlMs = ms;
        return this;
    }

    /**
     * @return the relays' lease TTL (0: no leases).
     */
    public long leaseTtlMs() {
        return leaseTtlMs;
    }

    /**
     * @param name the KV bucket of the relays' leases.
     * @return this.
     */
    public JetStreamSettings leaseBucket(final String name) {
        this.leaseBucket = name;
        return this;
    }

    /**
     * @return the lease bucket.
     */
    public String leaseBucket() {
        return leaseBucket;
    }

    /**
     * @param name NATS user, or null.
     * @return this.
     */
    public JetStreamSettings user(final String name) {
        this.user = name;
        return this;
    }

    /**
     * @return the NATS user, or null.
     */
    public String user() {
        return user;
    }

    /**
     * @param file file holding the user's password, or null.
     * @return this.
     */
    public JetStreamSettings passwordFile(final String file) {
        this.passwordFile = file;
        return this;
    }

    /**
     * @return the password file, or null.
     */
    public String passwordFile() {
        return passwordFile;
    }

    /**
     * @param file file holding a NATS token, or null.
     * @return this.
     */
    public JetStreamSettings tokenFile(final String file) {
        this.tokenFile = file;
        return this;
    }

    /**
     * @return the token file, or null.
     */
    public String tokenFile() {
        return tokenFile;
    }

    /**
     * @param file a NATS credentials file (JWT and nkey seed), or null.
     * @return this.
     */
    public JetStreamSettings credsFile(final String file) {
        this.credsFile = file;
        return this;
    }

    /**
     * @return the credentials file, or null.
     */
    public String credsFile() {
        return credsFile;
    }

    /**
     * @param file a file holding an nkey seed (nkey authentication without a JWT), or null.
     * @return this.
     */
    public JetStreamSettings nkeyFile(final String file) {
        this.nkeyFile = file;
        return this;
    }

    /**
     * @return the nkey seed file, or null.
     */
    public String nkeyFile() {
        return nkeyFile;
    }

    /**
     * @param file PEM certificates the servers' certificates must chain to (instead of the JVM's trust store), or
     *             null.
     * @return this.
     */
    public JetStreamSettings tlsCaFile(final String file) {
        this.tlsCaFile = file;
        return this;
    }

    /**
     * @return the TLS CA file, or null.
     */
    public String tlsCaFile() {
        return tlsCaFile;
    }

    /**
     * @param file PEM certificate (chain) presented to NATS for mutual TLS, or null.
     * @return this.
     */
    public JetStreamSettings tlsCertFile(final String file) {
        this.tlsCertFile = file;
        return this;
    }

    /**
     * @return the client certificate file, or null.
     */
    public String tlsCertFile() {
        return tlsCertFile;
    }

    /**
     * @param file PEM (PKCS#8) private key of the client certificate, or null.
     * @return this.
     */
    public JetStreamSettings tlsKeyFile(final String file) {
        this.tlsKeyFile = file;
        return this;
    }

    /**
     * @return the client key file, or null.
     */
    public String tlsKeyFile() {
        return tlsKeyFile;
    }
}
