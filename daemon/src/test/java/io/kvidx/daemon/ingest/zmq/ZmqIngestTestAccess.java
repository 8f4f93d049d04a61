package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.daemon.ingest.vllm.Capture;

import java.util.function.BooleanSupplier;

/**
 * Shared test helpers for other packages.
 */
public final class ZmqIngestTestAccess {
    private ZmqIngestTestAccess() {
    }

    /**
     * @param reader  index reader.
     * @param podId   pod id.
     * @param capture capture whose tokens form the chain.
     * @param lora    LoRA name or null.
     * @return the pod's depth.
     */
    public static int depth(final IndexReader reader, final String podId, final Capture capture, final String lora) {
        return ZmqIngestTest.depth(reader, podId, capture, lora);
    }

    /**
     * @param reader  index.
     * @param podId   pod.
     * @param capture capture whose chain is queried.
     * @param lora    LoRA name, or null.
     * @param salt    cache salt, or null.
     * @return depth the pod holds.
     */
    public static int depth(final IndexReader reader, final String podId, final Capture capture, final String lora,
        final String salt) {
        return ZmqIngestTest.depth(reader, podId, capture, lora, salt);
    }

    /**
     * @param reader index.
     * @param podId  pod.
     * @param keys   chain keys.
     * @param n      how many.
     * @return depth the pod holds.
     */
    public static int depthOfKeys(final IndexReader reader, final String podId, final long[] keys, final int n) {
        return ZmqIngestTest.depthOfKeys(reader, podId, keys, n);
    }

    /**
     * @param what      description.
     * @param condition condition.
     * @throws InterruptedException when interrupted.
     */
    public static void await(final String what, final BooleanSupplier condition) throws InterruptedException {
        ZmqIngestTest.await(what, condition);
    }
}
