package io.kvidx.daemon.jetstream;

import io.nats.client.api.PublishAck;

import java.util.concurrent.CompletableFuture;

/**
 * One message a relay took from its queue (ADR 0024): published and awaiting its acknowledgement, or held in a
 * standby's backlog ({@link RelayLeases}) while another relay holds its pod's lease.
 *
 * <p><b>Note:</b> made and written by the relay's agent thread only.
 */
final class RelayMessage {
    final String subject;
    /** The message id without the lease's revision: what two relays in step give the message. */
    final String baseId;
    final int type;
    /** The engine's sequence of a batch, else -1. */
    final long sequence;
    final long fingerprint;
    final byte[] body;
    /** The relay queue's consumer position at this message's record: passed once the message is in the stream. */
    final long startPosition;
    /** The pod's lease, or null without leases. */
    final RelayLeases.Lease lease;
    /** The id published: the base id, and the lease's revision when there is a lease. */
    String id;
    CompletableFuture<PublishAck> ack;
    long sentNanos;

    RelayMessage(final String subject, final String baseId, final int type, final long sequence,
        final long fingerprint, final byte[] body, final long startPosition, final RelayLeases.Lease lease) {
        this.subject = subject;
        this.baseId = baseId;
        this.type = type;
        this.sequence = sequence;
        this.fingerprint = fingerprint;
        this.body = body;
        this.startPosition = startPosition;
        this.lease = lease;
    }
}
