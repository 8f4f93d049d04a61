package io.kvidx.daemon.writer;

import io.kvidx.daemon.state.PodBlockMap;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;

import java.util.Arrays;

/**
 * A writer agent's inbox of {@link WriterTask}s and the view of its registered pods a task's step gets: collected
 * afresh before each step from the agent's pod states.
 *
 * <p><b>Note:</b> {@link #submit} is thread safe (many producers); everything else runs on the writer's thread.
 */
final class RegisteredPods implements WriterTask.Pods {
    /** Tasks waiting for a writer, at most. */
    static final int TASK_CAPACITY = 16;

    private final ManyToOneConcurrentArrayQueue<WriterTask> tasks = new ManyToOneConcurrentArrayQueue<>(
        TASK_CAPACITY);
    private WriterTask current;
    private PodState[] registered = new PodState[16];
    private int count;
    private long consumerPosition;

    /**
     * @param task a task for the writer.
     * @return false when the inbox is full.
     */
    boolean submit(final WriterTask task) {
        return tasks.offer(task);
    }

    /**
     * Steps the current task (taking the next one when none), with the pods registered now.
     *
     * @param pods          the agent's pod states by number.
     * @param owned         the numbers it owns.
     * @param ownedCount    how many.
     * @param queuePosition its queue's consumer position.
     * @return work done (0 when no task waits).
     */
    int step(final PodState[] pods, final int[] owned, final int ownedCount, final long queuePosition) {
        WriterTask task = current;
        if (task == null) {
            task = tasks.poll();
            if (task == null) {
                return 0;
            }
            current = task;
        }
        count = 0;
        for (int i = 0; i < ownedCount; i++) {
            final PodState pod = pods[owned[i]];
            if (pod != null && pod.registered() && pod.blocks != null) {
                if (count == registered.length) {
                    registered = Arrays.copyOf(registered, count * 2);
                }
                registered[count++] = pod;
            }
        }
        consumerPosition = queuePosition;
        try {
            if (task.step(this)) {
                current = null;
            }
        } catch (final RuntimeException ex) {
            current = null;
            task.abandon(ex);
        } finally {
            Arrays.fill(registered, 0, count, null);
            count = 0;
        }
        return 1;
    }

    /**
     * Abandons the current and the waiting tasks (the writer closes).
     */
    void abandonAll() {
        final IllegalStateException closed = new IllegalStateException("the writer closed");
        if (current != null) {
            current.abandon(closed);
            current = null;
        }
        tasks.drain(t -> t.abandon(closed));
    }

    @Override
    public int count() {
        return count;
    }

    @Override
    public String podId(final int i) {
        return pod(i).podId;
    }

    @Override
    public int slot(final int i) {
        return pod(i).slot;
    }

    @Override
    public boolean suspect(final int i) {
        return pod(i).suspect;
    }

    @Override
    public PodBlockMap blocks(final int i) {
        return pod(i).blocks;
    }

    @Override
    public long consumerPosition() {
        return consumerPosition;
    }

    private PodState pod(final int i) {
        java.util.Objects.checkIndex(i, count);
        return registered[i];
    }
}
