package io.kvidx.daemon.writer;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.TierMapWriter;
import io.kvidx.daemon.ingest.vllm.VllmEvent;
import io.kvidx.daemon.state.PodBlockMap;
import org.agrona.concurrent.status.AtomicCounter;

/**
 * Keeps a pod's region of the host tier map ({@link TierMapWriter}) in step with its block map: after every change
 * of a block's media in the {@link PodBlockMap} (which stays the authority on media), the block's tier entry gets
 * the media it now has and the locality the event gave for its medium; a block that left every medium leaves the
 * tier map. Clears and pod removal are the index writer's ({@code IndexWriter.clearPod}, {@code podDown}).
 *
 * <p>Locality: {@code REMOTE} sets the medium's REMOTE flag, {@code LOCAL} clears it, an absent locality leaves it
 * as recorded (a new entry is local: vLLM never infers locality, and a pod's own GPU and CPU copies are local).
 * Bad values are counted and logged once per (kind, pod), and the event is applied with the value defaulted: an
 * unknown medium string (or a medium that is not a string) is kept as the "other" medium; a locality that is not
 * {@code LOCAL}/{@code REMOTE} is taken as absent.
 *
 * <p><b>Note:</b> owned by one writer agent; it writes the regions of that agent's pods only.
 */
final class TierRecorder {
    private final TierMapWriter tiers;
    private final IngestErrors errors;
    private final AtomicCounter unknownMedia;
    private final AtomicCounter badLocalities;

    TierRecorder(final TierMapWriter tiers, final IngestCounters counters, final IngestErrors errors) {
        this.tiers = tiers;
        this.errors = errors;
        this.unknownMedia = counters.get(CounterType.UNKNOWN_MEDIA);
        this.badLocalities = counters.get(CounterType.BAD_LOCALITIES);
    }

    /**
     * Counts (and logs once per pod) the field values the decoder defaulted.
     */
    void check(final VllmEvent e, final PodState p) {
        final int flags = e.flags();
        if (flags == 0) {
            return;
        }
        if ((flags & VllmEvent.FLAG_UNKNOWN_MEDIUM) != 0) {
            unknownMedia.increment();
            errors.report(CounterType.UNKNOWN_MEDIA.typeId(), p.podNumber, () -> "pod " + p.podId + ": "
                + VllmEvent.typeName(e.type()) + " with an unknown medium (known: GPU, CPU, DISK and their aliases);"
                + " its blocks are kept on the 'other' medium, which tier-weighted scoring counts as disk");
        }
        if ((flags & VllmEvent.FLAG_BAD_LOCALITY) != 0) {
            badLocalities.increment();
            errors.report(CounterType.BAD_LOCALITIES.typeId(), p.podNumber, () -> "pod " + p.podId + ": "
                + VllmEvent.typeName(e.type()) + " with a locality that is not \"LOCAL\" or \"REMOTE\"; taken as"
                + " unspecified");
        }
    }

    /**
     * A block of the pod is now held on {@code media} (its block map's media after the store of one medium).
     *
     * @param slot      pod slot.
     * @param key       router key.
     * @param media     every medium holding it now.
     * @param mediumBit the medium the event stored it on.
     * @param locality  the event's {@code VllmEvent.LOCALITY_*}.
     */
    void stored(final int slot, final long key, final long media, final long mediumBit, final int locality) {
        final int bit = (int) mediumBit;
        tiers.update(slot, key, (int) media, locality == VllmEvent.LOCALITY_UNSPECIFIED ? 0 : bit,
            locality == VllmEvent.LOCALITY_REMOTE ? bit : 0);
    }

    /**
     * A block of the pod left one medium.
     *
     * @param slot    pod slot.
     * @param key     router key.
     * @param removed true when no medium holds it any more (the block map dropped its mapping).
     * @param media   the media still holding it.
     */
    void released(final int slot, final long key, final boolean removed, final long media) {
        if (removed) {
            tiers.remove(slot, key);
        } else {
            tiers.update(slot, key, (int) media, 0, 0);
        }
    }

    /**
     * A block left the pod's block map without an event (map eviction).
     */
    void forget(final int slot, final long key) {
        tiers.remove(slot, key);
    }

    /**
     * Fills a slot's region from a block map a previous daemon left (its media; localities are not persisted and
     * come back with the pods' next events). Cold: once per pod at registration.
     *
     * @param slot   pod slot.
     * @param blocks the pod's restored block map.
     */
    void refill(final int slot, final PodBlockMap blocks) {
        blocks.forEach((hash, key, media) -> tiers.update(slot, key, (int) media, 0, 0));
    }
}
