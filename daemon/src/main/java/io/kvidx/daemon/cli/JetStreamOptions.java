package io.kvidx.daemon.cli;

import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.JetStreamSettings;
import picocli.CommandLine.Option;

/**
 * The options of {@code kvidx daemon} for KV events through NATS JetStream (a picocli mixin, ADR 0024): the servers,
 * the role, the stream, subjects and bucket, retention, snapshots and credentials. Unset options leave the context as
 * the config file made it; defaults from {@link DaemonConfiguration}. docs/jetstream.md has the topology.
 */
final class JetStreamOptions {
    @Option(names = "--jetstream", paramLabel = "URL[,URL]", description = "NATS servers (nats://HOST:PORT or "
        + "tls://HOST:PORT): as a consumer (the default role) the daemon builds its index from the stream, beside any "
        + "direct sockets; as a relay it publishes what its transports receive (default: off).")
    private String url;

    @Option(names = "--jetstream-role", paramLabel = "consumer|relay", description = "consumer: read the stream "
        + "into the index; relay: publish the events this daemon ingests to the stream (default "
        + DaemonConfiguration.JETSTREAM_ROLE_DEFAULT + ").")
    private String role;

    @Option(names = "--jetstream-stream", paramLabel = "NAME", description = "Stream name (default "
        + DaemonConfiguration.JETSTREAM_STREAM_DEFAULT + ").")
    private String stream;

    @Option(names = "--jetstream-subject-prefix", paramLabel = "PREFIX", description = "Events go to "
        + "PREFIX.<model>.<pod>, model and pod encoded as subject tokens (default "
        + DaemonConfiguration.JETSTREAM_SUBJECT_PREFIX_DEFAULT + ").")
    private String subjectPrefix;

    @Option(names = "--jetstream-bucket", paramLabel = "NAME", description = "Object store bucket of the index "
        + "snapshots (default " + DaemonConfiguration.JETSTREAM_BUCKET_DEFAULT + ").")
    private String bucket;

    @Option(names = "--jetstream-max-age-ms", paramLabel = "MS", description = "Retention by age of the stream and "
        + "bucket when this daemon creates them (default " + DaemonConfiguration.JETSTREAM_MAX_AGE_MS_DEFAULT + ").")
    private Long maxAgeMs;

    @Option(names = "--jetstream-max-bytes", paramLabel = "BYTES", description = "Retention by size of the stream "
        + "and bucket when this daemon creates them (default " + DaemonConfiguration.JETSTREAM_MAX_BYTES_DEFAULT
        + ").")
    private Long maxBytes;

    @Option(names = "--jetstream-duplicate-window-ms", paramLabel = "MS", description = "How long a stream this "
        + "daemon creates remembers message ids, so that two relays store each event once (default "
        + DaemonConfiguration.JETSTREAM_DUPLICATE_WINDOW_MS_DEFAULT + ").")
    private Long duplicateWindowMs;

    @Option(names = "--jetstream-snapshot-interval-ms", paramLabel = "MS", description = "How often a consumer "
        + "stores a snapshot in the bucket unless a fresh one is there; 0 = never (default "
        + DaemonConfiguration.JETSTREAM_SNAPSHOT_INTERVAL_MS_DEFAULT + ").")
    private Long snapshotIntervalMs;

    @Option(names = "--jetstream-snapshot-events", paramLabel = "N", description = "Events after which a consumer "
        + "stores a snapshot before the interval is up (default "
        + DaemonConfiguration.JETSTREAM_SNAPSHOT_EVENTS_DEFAULT + ").")
    private Long snapshotEvents;

    @Option(names = "--jetstream-exit-on-loss", negatable = true, description = "A consumer that finds stream "
        + "messages lost while running marks its cell for a new index and stops the daemon (exit 1), so that its "
        + "restart loads the newest snapshot (default " + DaemonConfiguration.JETSTREAM_EXIT_ON_LOSS_DEFAULT + ").")
    private Boolean exitOnLoss;

    @Option(names = "--jetstream-lease-ttl-ms", paramLabel = "MS", description = "A relay publishes a pod's events "
        + "only while it holds the pod's lease (a key of the lease bucket with this TTL); the other relays of the "
        + "same engines stand by and take over once it expires. 0: no leases, every relay publishes (one relay per "
        + "engine only) (default " + DaemonConfiguration.JETSTREAM_LEASE_TTL_MS_DEFAULT + ").")
    private Long leaseTtlMs;

    @Option(names = "--jetstream-lease-bucket", paramLabel = "NAME", description = "KV bucket of the relays' leases "
        + "(default " + DaemonConfiguration.JETSTREAM_LEASE_BUCKET_DEFAULT + ").")
    private String leaseBucket;

    @Option(names = "--jetstream-user", paramLabel = "USER", description = "NATS user (with "
        + "--jetstream-password-file).")
    private String user;

    @Option(names = "--jetstream-password-file", paramLabel = "FILE", description = "File holding the NATS user's "
        + "password.")
    private String passwordFile;

    @Option(names = "--jetstream-token-file", paramLabel = "FILE", description = "File holding a NATS token.")
    private String tokenFile;

    @Option(names = "--jetstream-creds-file", paramLabel = "FILE", description = "NATS credentials file (user JWT "
        + "and nkey seed).")
    private String credsFile;

    @Option(names = "--jetstream-nkey-file", paramLabel = "FILE", description = "File holding an nkey seed (nkey "
        + "authentication without a JWT).")
    private String nkeyFile;

    @Option(names = "--jetstream-tls-ca-file", paramLabel = "FILE", description = "PEM certificates the NATS "
        + "servers' must chain to (tls:// URLs; default: the JVM's trust store).")
    private String tlsCaFile;

    @Option(names = "--jetstream-tls-cert-file", paramLabel = "FILE", description = "PEM certificate (chain) this "
        + "daemon presents to the NATS servers (mutual TLS; tls:// URLs, with --jetstream-tls-key-file).")
    private String tlsCertFile;

    @Option(names = "--jetstream-tls-key-file", paramLabel = "FILE", description = "PEM (PKCS#8) private key of "
        + "--jetstream-tls-cert-file.")
    private String tlsKeyFile;

    /**
     * Sets the options given.
     *
     * @param context the daemon's context.
     */
    void applyTo(final DaemonContext context) {
        final JetStreamSettings j = context.jetstream();
        if (url != null) {
            j.url(url);
        }
        if (role != null) {
            j.role(role);
        }
        if (stream != null) {
            j.stream(stream);
        }
        if (subjectPrefix != null) {
            j.subjectPrefix(subjectPrefix);
        }
        if (bucket != null) {
            j.bucket(bucket);
        }
        if (maxAgeMs != null) {
            j.maxAgeMs(maxAgeMs);
        }
        if (maxBytes != null) {
            j.maxBytes(maxBytes);
        }
        if (duplicateWindowMs != null) {
            j.duplicateWindowMs(duplicateWindowMs);
        }
        if (snapshotIntervalMs != null) {
            j.snapshotIntervalMs(snapshotIntervalMs);
        }
        if (snapshotEvents != null) {
            j.snapshotEvents(snapshotEvents);
        }
        if (exitOnLoss != null) {
            j.exitOnLoss(exitOnLoss);
        }
        if (leaseTtlMs != null) {
            j.leaseTtlMs(leaseTtlMs);
        }
        if (leaseBucket != null) {
            j.leaseBucket(leaseBucket);
        }
        if (user != null) {
            j.user(user);
        }
        if (passwordFile != null) {
            j.passwordFile(passwordFile);
        }
        if (tokenFile != null) {
            j.tokenFile(tokenFile);
        }
        if (credsFile != null) {
            j.credsFile(credsFile);
        }
        if (nkeyFile != null) {
            j.nkeyFile(nkeyFile);
        }
        if (tlsCaFile != null) {
            j.tlsCaFile(tlsCaFile);
        }
        if (tlsCertFile != null) {
            j.tlsCertFile(tlsCertFile);
        }
        if (tlsKeyFile != null) {
            j.tlsKeyFile(tlsKeyFile);
        }
    }
}
