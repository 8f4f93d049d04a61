package io.kvidx.daemon.writer;

import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.TierMapWriter;
import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.state.PodBlockMap;
import org.agrona.concurrent.status.AtomicCounter;

/**
 * Keeps a pod's region of the host tier map ({@link TierMapWriter}) in step with its block map: after every change
 * of a block's media in the {@link PodBlockMap} (which stays the authority on media), the block's tier entry gets
 * the media it now has and the locality the event gave for its medium; a block that left every medium leaves the
 * tier map. Clears and pod removal are the index writer's ({@code IndexWriter.clearPod}, {@code podDown}).
 *
 * <p>A block held on the GPU alone, locally (vLLM's default, and nearly every block of a fleet without offloading),
 * gets no entry: readers take a missing entry as exactly that. The block map marks the blocks that have one
 * ({@link PodBlockMap#markTiered}), so that the others cost the tier map no lookup when they are stored or
 * removed (measured in docs/perf.md, "Write path": the lookups were a third of a block's cost).
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
    void check(final BlockEvent e, final PodState p) {
        final int flags = e.flags();
        if (flags == 0) {
            return;
        }
        if ((flags & BlockEvent.FLAG_UNKNOWN_MEDIUM) != 0) {
            unknownMedia.increment();
            errors.report(CounterType.UNKNOWN_MEDIA.typeId(), p.podNumber, () -> "pod " + p.podId + ": "
                + BlockEvent.typeName(e.type()) + " with an unknown medium (known: GPU, CPU, DISK and their aliases);"
                + " its blocks are kept on the 'other' medium, which tier-weighted scoring counts as disk");
        }
        if ((flags & BlockEvent.FLAG_BAD_LOCALITY) != 0) {
            badLocalities.increment();
            errors.report(CounterType.BAD_LOCALITIES.typeId(), p.podNumber, () -> "pod " + p.podId + ": "
                + BlockEvent.typeName(e.type()) + " with a locality that is not \"LOCAL\" or \"REMOTE\"; taken as"
                + " unspecified");
        }
    }

    /**
     * A block of the pod is now held on one more medium: call right after {@code map.store} stored it.
     *
     * @param slot      pod slot.
     * @param key       router key.
     * @param map       the pod's block map, whose last store was this block's.
     * @param mediumBit the medium the event stored it on.
     * @param locality  the event's {@code BlockEvent.LOCALITY_*}.
     */
    void stored(final int slot, final long key, final PodBlockMap map, final long mediumBit, final int locality) {
        final long media = map.lastMedia();
        if (!map.lastTiered()) {
            if (media == TierMapDescriptor.MEDIUM_GPU && locality != BlockEvent.LOCALITY_REMOTE) {
                // No entry, and none needed: a missing entry reads as held on the GPU alone, locally.
                return;
            }
            map.markTiered(true);
        }
        final int bit = (int) mediumBit;
        tiers.update(slot, key, (int) media, locality == BlockEvent.LOCALITY_UNSPECIFIED ? 0 : bit,
            locality == BlockEvent.LOCALITY_REMOTE ? bit : 0);
    }

    /**
     * A block of the pod left one medium: call right after {@code map.release} released it.
     *
     * @param slot pod slot.
     * @param key  router key.
     * @param map  the pod's block map, whose last release was this block's.
     */
    void released(final int slot, final long key, final PodBlockMap map) {
        if (!map.lastTiered()) {
            // It had no entry, so it was held on the GPU alone, locally: what is left needs none either.
            return;
        }
        final long media = map.lastMedia();
        if (map.lastReleaseRemoved()) {
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
        blocks.retier((hash, key, media) -> media != TierMapDescriptor.MEDIUM_GPU
            && tiers.update(slot, key, (int) media, 0, 0) != 0);
    }
}
