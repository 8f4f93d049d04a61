package io.kvidx.daemon.serve;

import com.fasterxml.jackson.core.JsonGenerator;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.ChainedXxh3Hasher;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.ops.PodStatsFile;

import java.io.IOException;

/**
 * {@code POST /query} and {@code POST /query_by_hash}: the longest cached prefix of a prompt per instance and
 * data-parallel rank, in tokens, answered by the same {@link IndexReader} search a JVM router runs in process.
 * {@code /query} hashes the token ids into kvidx router keys (docs/keys.md) seeded by the model, LoRA adapter and
 * cache salt; {@code /query_by_hash} takes those keys from a caller that hashed the prompt itself.
 *
 * <p>The answer carries both shapes the peers use: Dynamo's {@code scores} / {@code tree_sizes} /
 * {@code frequencies}, and Mooncake's {@code instances} with per-tier prefixes ({@code gpu}, {@code cpu},
 * {@code disk}, in tokens) and per-rank detail. A chain longer than the index's maximum chain length is answered for
 * its first {@code maxChainLength} blocks.
 *
 * <p>Allocation: the token ids, keys and result live in this handler's reused arrays; what a request allocates
 * (the parser, the generator, a few strings) does not grow with the prompt.
 *
 * <p><b>Note:</b> one instance per event-loop thread.
 */
final class QueryHandler {
    private static final int GPU = 0;
    private static final int CPU = 1;
    private static final int DISK = 2;

    /** Searches of one query at most while the pod table's version keeps moving under them. */
    static final int SEARCH_ATTEMPTS = 4;

    /** The index search a query runs: {@link IndexReader#query}. */
    @FunctionalInterface
    interface Search {
        /**
         * @param keys       the chain's keys.
         * @param length     its length.
         * @param candidates pods to consider.
         * @param result     overwritten with the answer and the pod table version it saw.
         * @return the maximum depth.
         */
        int query(long[] keys, int length, PodSet candidates, PrefixResult result);
    }

    private final Search search;
    private final PodTableView.Source pods;
    private final TierMap tiers;
    private final PodStatsFile stats;
    private final RouterKeyHasher hasher;
    /** The cell's xxh3-chain hasher, or null when it is keyed by kvidx's router keys. */
    private final ChainedXxh3Hasher xxh3;
    private final int blockSize;
    private final int maxChain;
    private final long[] keys;
    private final PrefixResult result;
    private final int[][] tierDepth = new int[3][];
    /** Grouping scratch ({@link #group}): per instance index its first pod, per answer entry the next. */
    private final int[] head;
    private final int[] next;
    private final int[] order;

    QueryHandler(final IndexReader reader, final PodTableView.Source pods, final TierMap tiers,
        final PodStatsFile stats) {
        this(reader, reader::query, pods, tiers, stats);
    }

    /**
     * @param reader the index.
     * @param search its search ({@link IndexReader#query}; a test interposes on it).
     * @param pods   the pod table view.
     * @param tiers  the tier map, or null.
     * @param stats  the pod statistics, or null.
     */
    QueryHandler(final IndexReader reader, final Search search, final PodTableView.Source pods, final TierMap tiers,
        final PodStatsFile stats) {
        this.search = search;
        this.pods = pods;
        this.tiers = tiers;
        this.stats = stats;
        this.blockSize = reader.blockSize();
        this.hasher = new RouterKeyHasher(blockSize);
        this.xxh3 = reader.keyScheme() == IndexDescriptor.KEY_SCHEME_XXH3_CHAIN ? new ChainedXxh3Hasher(blockSize)
            : null;
        this.maxChain = reader.maxChainLength();
        this.keys = new long[maxChain];
        this.result = new PrefixResult();
        for (int t = 0; t < tierDepth.length; t++) {
            tierDepth[t] = new int[reader.maxPods()];
        }
        this.head = new int[reader.maxPods()];
        java.util.Arrays.fill(head, -1);
        this.next = new int[reader.maxPods()];
        this.order = new int[reader.maxPods()];
    }

    /**
     * Answers a query whose body has been read.
     *
     * @param body    the request.
     * @param byHash  true for {@code /query_by_hash} (keys given), false for {@code /query} (token ids given).
     * @param out     where the JSON answer goes.
     * @throws ApiException for a request the API refuses.
     * @throws IOException  when the answer cannot be written.
     */
    void answer(final RequestBody body, final boolean byHash, final JsonGenerator out) throws IOException {
        answer(body, byHash, false, out);
    }

    /**
     * Answers a query whose body has been read, in Dynamo's shape (with kvidx's additions) or in Mooncake's RFC shape.
     *
     * @param body     the request.
     * @param byHash   true for {@code /query_by_hash} (keys given), false for {@code /query} (token ids given).
     * @param mooncake true: Mooncake's RFC shape ({@code {tenant: {instance: {longest_matched, GPU, CPU, DISK, DP}}}},
     *                 {@code {}} for a model or group no pod serves), false: Dynamo's.
     * @param out      where the JSON answer goes.
     * @throws ApiException for a request the API refuses.
     * @throws IOException  when the answer cannot be written.
     */
    void answer(final RequestBody body, final boolean byHash, final boolean mooncake, final JsonGenerator out)
        throws IOException {
        answer(body, byHash, mooncake, Integer.MAX_VALUE, out);
    }

    /**
     * As {@link #answer(RequestBody, boolean, boolean, JsonGenerator)}, with a bound on the tier map lookups this
     * answer may make: an event loop answers a query whose matched pods' tiers would take more lookups than that on
     * another thread instead (one per matched block per pod with tiers recorded; 750-block prompts over many pods take
     * milliseconds).
     *
     * @param tierLookups tier map lookups allowed.
     * @throws TooManyTierLookups before anything is written, when the answer needs more lookups than allowed.
     */
    void answer(final RequestBody body, final boolean byHash, final boolean mooncake, final int tierLookups,
        final JsonGenerator out) throws IOException {
        if (byHash ? !body.hasHashes : !body.hasTokens) {
            throw ApiException.missing(byHash ? "block_hashes" : "token_ids");
        }
        if (body.blockSize > 0 && body.blockSize != blockSize) {
            throw new ApiException(400, ApiException.WRONG_BLOCK_SIZE, "block_size " + body.blockSize
                + " is not the cell's router block size " + blockSize);
        }
        if (byHash && xxh3 == null && body.hashKind != RequestBody.CELL_KEYS) {
            // A default cell is keyed by kvidx's router keys: the peers' XXH3 hashes would match nothing, silently.
            throw new ApiException(400, ApiException.WRONG_KEY_SCHEME, "'" + body.hashField + "' holds "
                + (body.hashKind == RequestBody.DYNAMO_PER_BLOCK ? "Dynamo's per-block" : "Mooncake's chained")
                + " XXH3-64 hashes, which this cell does not index: it was started with --key-scheme kvidx (the "
                + "default). Start the daemon with --key-scheme xxh3-chain to query by these hashes, or send kvidx "
                + "router keys (kvidx hash) as 'router_keys'");
        }
        PodTableView view = pods.current();
        final String group = body.group == null || body.group.isEmpty() ? Engine.DEFAULT_GROUP : body.group;
        String model = body.model;
        if (model == null) {
            model = view.onlyModel();
            if (model == null) {
                throw ApiException.missing("model_name");
            }
        }
        final int n;
        if (byHash) {
            n = Math.min(body.hashCount, maxChain);
            System.arraycopy(body.hashes, 0, keys, 0, n);
            if (xxh3 != null && body.hashKind == RequestBody.DYNAMO_PER_BLOCK) {
                // Dynamo's per-block hashes: chained into the cell's keys.
                xxh3.chainInPlace(keys, n);
            }
        } else {
            final int tokens = Math.min(body.tokenCount, maxChain * blockSize);
            if (xxh3 != null) {
                final long seed = ChainedXxh3Hasher.seed(body.lora);
                n = xxh3.keys(seed, ChainedXxh3Hasher.firstSeed(seed, body.salt), body.tokens, tokens, keys);
            } else {
                n = hasher.keys(RouterKeyHasher.chainSeed(model, body.lora, body.salt), body.tokens, tokens, keys);
            }
        }
        // The answer's slots are named by the view only when the search saw the pod table at the view's version: a
        // slot that changed hands meanwhile would otherwise give its old owner's depth to its new one. When the
        // version moved, the search runs again with the newer view (its candidates too), a bounded number of times.
        for (int attempt = 1; ; attempt++) {
            final PodSet candidates = view.candidates(model, group);
            if (candidates == null && mooncake) {
                // Mooncake's answer for a tenant (or model) it does not know: nothing matched.
                out.writeStartObject();
                out.writeEndObject();
                return;
            }
            if (candidates == null) {
                throw new ApiException(404, ApiException.UNKNOWN_MODEL, "no indexer for model=" + model + " tenant="
                    + group);
            }
            try {
                search.query(keys, n, candidates, result);
            } catch (final IndexException ex) {
                throw new ApiException(503, ApiException.UNAVAILABLE, "the index cannot answer now: "
                    + ex.getMessage());
            }
            if (result.podTableVersion() == view.podTableVersion) {
                break;
            }
            if (attempt == SEARCH_ATTEMPTS) {
                throw new ApiException(503, ApiException.UNAVAILABLE, "the pod table changed during each of "
                    + SEARCH_ATTEMPTS + " searches: retry");
            }
            view = pods.current();
        }
        tierDepths(n, tiers != null && tiers.isAttached(), tierLookups);
        if (mooncake) {
            writeMooncake(out, view, group, body.instanceId);
        } else {
            write(out, view, n);
        }
    }

    /**
     * Mooncake's RFC shape: {@code {tenant: {instance: {longest_matched, GPU, CPU, DISK, DP: {rank: tokens}}}}}, in
     * tokens, the tiers cumulative as in {@code instances}; only the instance named by {@code instance_id} when given.
     */
    private void writeMooncake(final JsonGenerator out, final PodTableView view, final String group,
        final String onlyInstance) throws IOException {
        final int instances = group(view);
        out.writeStartObject();
        out.writeObjectFieldStart(group);
        for (int k = 0; k < instances; k++) {
            final String instance = view.instance[result.slot(head[order[k]])];
            if (onlyInstance != null && !onlyInstance.equals(instance)) {
                continue;
            }
            int best = 0;
            int gpu = 0;
            int cpu = 0;
            for (int i = head[order[k]]; i >= 0; i = next[i]) {
                final int s = result.slot(i);
                best = Math.max(best, result.depth(i));
                gpu = Math.max(gpu, tierDepth[GPU][s]);
                cpu = Math.max(cpu, tierDepth[CPU][s]);
            }
            out.writeObjectFieldStart(instance);
            out.writeNumberField("longest_matched", best * blockSize);
            out.writeNumberField("GPU", gpu * blockSize);
            out.writeObjectFieldStart("DP");
            for (int i = head[order[k]]; i >= 0; i = next[i]) {
                final int s = result.slot(i);
                out.writeNumberField(view.rankName[s], tierDepth[GPU][s] * blockSize);
            }
            out.writeEndObject();
            out.writeNumberField("CPU", cpu * blockSize);
            out.writeNumberField("DISK", best * blockSize);
            out.writeEndObject();
        }
        out.writeEndObject();
        out.writeEndObject();
        for (int k = 0; k < instances; k++) {
            head[order[k]] = -1;
        }
    }

    /**
     * Per pod with a match, the leading blocks it holds in each tier, cumulative as the peers count them: {@code gpu}
     * the leading blocks on GPU (a block of unknown tier counts as GPU, vLLM's default medium, as
     * {@link TierMap#tierOf} does), {@code cpu} those on GPU or CPU memory, {@code disk} those on any medium (the
     * whole match). Without a tier map every tier is the whole match.
     */
    private void tierDepths(final int n, final boolean withTiers, final int tierLookups) {
        if (withTiers && tierLookups != Integer.MAX_VALUE) {
            long needed = 0;
            for (int i = 0; i < result.count(); i++) {
                final int depth = Math.min(result.depth(i), n);
                if (depth > 0 && tiers.entryCount(result.slot(i)) > 0) {
                    needed += depth;
                }
            }
            if (needed > tierLookups) {
                throw TooManyTierLookups.INSTANCE;
            }
        }
        for (int i = 0; i < result.count(); i++) {
            final int slot = result.slot(i);
            final int depth = Math.min(result.depth(i), n);
            int gpu = -1;
            int cpu = -1;
            // A pod with no tier recorded answers "unknown" (GPU) for every block: no lookups.
            final boolean recorded = withTiers && depth > 0 && tiers.entryCount(slot) > 0;
            for (int b = 0; recorded && b < depth && cpu < 0; b++) {
                final int bits = tiers.tierBits(slot, keys[b]);
                final int held = bits < 0 ? 0 : bits & TierMapDescriptor.MEDIA_MASK;
                final boolean inGpu = held == 0 || (held & TierMapDescriptor.MEDIUM_GPU) != 0;
                final boolean inCpu = inGpu || (held & TierMapDescriptor.MEDIUM_CPU) != 0;
                if (gpu < 0 && !inGpu) {
                    gpu = b;
                }
                if (!inCpu) {
                    cpu = b;
                }
            }
            tierDepth[GPU][slot] = gpu < 0 ? depth : gpu;
            tierDepth[CPU][slot] = cpu < 0 ? depth : cpu;
            tierDepth[DISK][slot] = depth;
        }
    }

    private void write(final JsonGenerator out, final PodTableView view, final int n) throws IOException {
        final int instances = group(view);
        out.writeStartObject();
        // Dynamo's shape: scores (the GPU match, in tokens) and tree sizes (blocks held) per instance, per rank.
        out.writeObjectFieldStart("scores");
        writePerRank(out, view, instances, false);
        out.writeEndObject();
        out.writeObjectFieldStart("tree_sizes");
        writePerRank(out, view, instances, true);
        out.writeEndObject();
        // frequencies[i]: how many pods hold block i of the prompt.
        out.writeArrayFieldStart("frequencies");
        final int count = result.count();
        final int maxDepth = result.maxDepth();
        for (int b = 0; b < maxDepth; b++) {
            int holders = 0;
            for (int i = 0; i < count; i++) {
                if (result.depth(i) > b) {
                    holders++;
                }
            }
            out.writeNumber(holders);
        }
        out.writeEndArray();
        // Mooncake's shape: per instance the longest prefix and per tier, with per-rank detail.
        out.writeObjectFieldStart("instances");
        for (int k = 0; k < instances; k++) {
            int best = 0;
            int gpu = 0;
            int cpu = 0;
            int disk = 0;
            for (int i = head[order[k]]; i >= 0; i = next[i]) {
                final int s = result.slot(i);
                best = Math.max(best, result.depth(i));
                gpu = Math.max(gpu, tierDepth[GPU][s]);
                cpu = Math.max(cpu, tierDepth[CPU][s]);
                disk = Math.max(disk, tierDepth[DISK][s]);
            }
            out.writeObjectFieldStart(view.instance[result.slot(head[order[k]])]);
            out.writeNumberField("longest_matched", best * blockSize);
            out.writeNumberField("gpu", gpu * blockSize);
            out.writeNumberField("cpu", cpu * blockSize);
            out.writeNumberField("disk", disk * blockSize);
            // Per rank, the GPU match (Dynamo's score of that rank).
            out.writeObjectFieldStart("dp");
            for (int i = head[order[k]]; i >= 0; i = next[i]) {
                final int s = result.slot(i);
                out.writeNumberField(view.rankName[s], tierDepth[GPU][s] * blockSize);
            }
            out.writeEndObject();
            out.writeEndObject();
        }
        out.writeEndObject();
        out.writeNumberField("block_size", blockSize);
        out.writeNumberField("query_blocks", n);
        out.writeEndObject();
        for (int k = 0; k < instances; k++) {
            head[order[k]] = -1;
        }
    }

    /**
     * Groups the answer's pods with a match by instance, in the answer's order: {@code order[0 .. returned)} are the
     * instances' indices, each with its pods listed from {@code head[instance]} through {@code next}. The caller
     * resets {@code head} of the instances listed.
     */
    private int group(final PodTableView view) {
        final int count = result.count();
        int instances = 0;
        for (int i = count - 1; i >= 0; i--) {
            final int slot = result.slot(i);
            if (result.depth(i) <= 0 || view.instance[slot] == null) {
                continue;
            }
            final int inst = view.instanceIndex[slot];
            if (head[inst] < 0) {
                order[instances++] = inst;
            }
            next[i] = head[inst];
            head[inst] = i;
        }
        // Listed from the last answer backwards: put the instances in the answer's order.
        for (int lo = 0, hi = instances - 1; lo < hi; lo++, hi--) {
            final int t = order[lo];
            order[lo] = order[hi];
            order[hi] = t;
        }
        return instances;
    }

    /** Writes {instance: {rank: value}} for the pods with a match: the match in tokens, or the blocks held. */
    private void writePerRank(final JsonGenerator out, final PodTableView view, final int instances,
        final boolean treeSize) throws IOException {
        for (int k = 0; k < instances; k++) {
            out.writeObjectFieldStart(view.instance[result.slot(head[order[k]])]);
            for (int i = head[order[k]]; i >= 0; i = next[i]) {
                final int s = result.slot(i);
                out.writeFieldName(view.rankName[s]);
                out.writeNumber(treeSize ? blocksHeld(s, view) : (long) tierDepth[GPU][s] * blockSize);
            }
            out.writeEndObject();
        }
    }

    private long blocksHeld(final int slot, final PodTableView view) {
        if (stats == null || slot >= stats.slots() || stats.generation(slot) != view.generation[slot]) {
            return 0;
        }
        return stats.blocks(slot);
    }

    /**
     * A query whose tier lookups exceed the bound it was answered with: nothing was written; answer it again where
     * the bound does not apply. One instance, no stack trace (control flow on the event loop, no allocation).
     */
    static final class TooManyTierLookups extends RuntimeException {
        private static final long serialVersionUID = 1L;
        static final TooManyTierLookups INSTANCE = new TooManyTierLookups();

        private TooManyTierLookups() {
            super("more tier map lookups than an event loop makes", null, false, false);
        }
    }
}
