package io.kvidx.daemon.writer;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.state.PodBlockMap;

/**
 * Which of a hybrid model's KV cache groups the index follows. A prefix hit needs the full-attention KV of every
 * leading block, so the index holds one group per pod, its <em>main group</em>: the first group whose BlockStored
 * names a full-attention kind ({@code full_attention}, {@code mla_attention}, {@code sink_full_attention}). vLLM
 * stores the same block hash in every group (the hash does not include the group), and a sliding-window or Mamba
 * group drops blocks that the full-attention group still holds; its events must not touch the index.
 *
 * <p>The rule, per event:
 * <ul>
 *   <li>BlockStored of the main group: applied. Of a group whose kind is not full attention, or of a second
 *   full-attention group: counted, not applied.</li>
 *   <li>BlockStored naming a full-attention kind while no main group is known: its group becomes the main group.</li>
 *   <li>Events without {@code kv_cache_spec_kind} (engines before vllm#40984; BlockRemoved never carries it): the
 *   main group when known, else group 0 (a single-group engine sends {@code group_idx} 0 or none), unless group 0
 *   is known not to be full attention.</li>
 *   <li>BlockStored that names the main group with another kind (the engine restarted with another configuration):
 *   the main group is forgotten and the next full-attention store names it again.</li>
 *   <li>AllBlocksCleared: the whole pod, whatever its groups.</li>
 * </ul>
 * The main group is kept in the pod's {@link PodBlockMap} header so that a restarted daemon applies the group's
 * removals before the engine's next BlockStored names its kind again.
 *
 * <p><b>Note:</b> one per pod ({@link PodState}), owned by the pod's writer agent.
 */
final class AttentionGroups {
    /** Groups whose kind was seen not to be full attention, as bits (groups 0..63; higher groups are not kept). */
    private long otherKnown;

    /**
     * @param map the pod's block map (holds the main group).
     * @param e   a BlockStored or BlockRemoved event.
     * @return true when the event is for the group the index follows.
     */
    boolean follows(final PodBlockMap map, final BlockEvent e) {
        final int group = e.groupIdx();
        final int main = map.mainGroup();
        final int kind = e.type() == BlockEvent.TYPE_BLOCK_STORED ? e.specKind() : BlockEvent.SPEC_KIND_ABSENT;
        if (kind == BlockEvent.SPEC_KIND_OTHER) {
            if (group < 64) {
                otherKnown |= 1L << group;
            }
            if (group == main) {
                map.mainGroup(-1);
            }
            return false;
        }
        if (kind == BlockEvent.SPEC_KIND_FULL_ATTENTION) {
            if (main < 0) {
                map.mainGroup(group);
                return true;
            }
            return group == main;
        }
        if (main >= 0) {
            return group == main;
        }
        return group == 0 && (otherKnown & 1L) == 0;
    }
}
