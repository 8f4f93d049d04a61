package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.ingest.zmq.JavaVllmPublisherAccess;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * A vLLM engine for the lifecycle tests: one pod publishing over ZeroMQ (PUB + replay ROUTER, JeroMQ in this JVM,
 * vLLM 0.26+ framing, map events) on topic {@code kv@<pod>@<model>}, with seeded chains of random tokens.
 */
final class TestEngine implements AutoCloseable {
    static final String MODEL = "Qwen/Qwen3-0.6B";
    static final int BLOCK_SIZE = 16;

    final String pod;
    private final JavaVllmPublisherAccess publisher;

    /** A chain of blocks: its tokens, its engine hashes, and its router keys under {@link #MODEL}. */
    record Chain(int[] tokens, long[] hashes, long[] keys) {
        static Chain random(final long seed, final int blocks) {
            final SplittableRandom random = new SplittableRandom(seed);
            final int[] tokens = new int[blocks * BLOCK_SIZE];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = 1 + random.nextInt(150_000);
            }
            final long[] hashes = new long[blocks];
            for (int i = 0; i < blocks; i++) {
                hashes[i] = random.nextLong() | 1;
            }
            final long[] keys = new long[blocks];
            new RouterKeyHasher(BLOCK_SIZE).keys(RouterKeyHasher.chainSeed(MODEL, null, null), tokens, tokens.length,
                keys);
            return new Chain(tokens, hashes, keys);
        }

        int length() {
            return keys.length;
        }
    }

    TestEngine(final String pod) {
        this.pod = pod;
        this.publisher = new JavaVllmPublisherAccess("kv@" + pod + "@" + MODEL, true);
    }

    String endpoint() {
        return publisher.endpoint();
    }

    String replayEndpoint() {
        return publisher.replayEndpoint();
    }

    /** Publishes a BlockStored of blocks [from, to) of the chain (on the GPU). */
    long store(final Chain chain, final int from, final int to) {
        return publisher.publish(new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(Arrays.copyOfRange(chain.hashes(), from, to), from == 0 ? null : chain.hashes()[from - 1],
                Arrays.copyOfRange(chain.tokens(), from * BLOCK_SIZE, to * BLOCK_SIZE), BLOCK_SIZE, null, "GPU")
            .batch(0));
    }

    /** Publishes a BlockRemoved of blocks [from, to) of the chain (from the GPU). */
    long remove(final Chain chain, final int from, final int to) {
        return publisher.publish(new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .removed(Arrays.copyOfRange(chain.hashes(), from, to), "GPU").batch(0));
    }

    /** Publishes an AllBlocksCleared. */
    long clear() {
        return publisher.publish(new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64).cleared()
            .batch(0));
    }

    /** Publishes an empty batch. */
    long ping() {
        return publisher.publish(new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64).batch(0));
    }

    /**
     * @return the slot of the alive pod with this id, or -1.
     */
    static int slotOf(final IndexReader reader, final String pod) {
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            final int at = slot;
            if (reader.isAlive(slot) && pod.equals(io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.pod(at))
                .podId())) {
                return slot;
            }
        }
        return -1;
    }

    /**
     * @return how many leading blocks of the chain the pod holds (0 when it is not alive).
     */
    static int depth(final IndexReader reader, final String pod, final Chain chain) {
        final int slot = slotOf(reader, pod);
        if (slot < 0) {
            return 0;
        }
        final PrefixResult result = new PrefixResult();
        io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.queryExact(chain.keys(), chain.length(), null, result));
        return result.depthOf(slot);
    }

    @Override
    public void close() {
        publisher.close();
    }
}
