package io.kvidx.daemon.writer;

import io.kvidx.daemon.state.PodBlockMap;

/**
 * Work another thread hands a writer agent ({@link WriterPool#submit}): it runs on the writer's thread, between
 * reads of its queue, one {@link #step} per duty cycle until it says it is done, so that it can read what only the
 * writer may touch (its pods' {@link PodBlockMap}s) without a message type of the queue and without a pod number.
 * A step should do bounded work (a daemon snapshot serialises one pod per step): the writer's pods wait meanwhile.
 *
 * <p><b>Note:</b> {@link #step} and {@link #abandon} are called by the writer's thread only.
 */
public interface WriterTask {
    /**
     * One step of the task.
     *
     * @param pods the pods the writer has registered now (valid during this call only).
     * @return true when the task is done (it leaves the writer); false to be stepped again at the next duty cycle.
     */
    boolean step(Pods pods);

    /**
     * The task leaves the writer unfinished: its step threw, or the writer closed with the task pending.
     *
     * @param cause why.
     */
    void abandon(Throwable cause);

    /**
     * The pods a writer has registered (alive in the index), read on the writer's thread.
     */
    interface Pods {
        /**
         * @return the pods registered now.
         */
        int count();

        /**
         * @param i a pod, 0 .. {@link #count()} - 1.
         * @return its id.
         */
        String podId(int i);

        /**
         * @param i a pod.
         * @return its index slot.
         */
        int slot(int i);

        /**
         * @param i a pod.
         * @return true when the writer holds it suspect (its state may be incomplete).
         */
        boolean suspect(int i);

        /**
         * @param i a pod.
         * @return its engine-hash map (the writer's: read it during the step only).
         */
        PodBlockMap blocks(int i);

        /**
         * @return each writer queue's consumer position now: the writer has applied every message before its own.
         */
        long consumerPosition();
    }
}
