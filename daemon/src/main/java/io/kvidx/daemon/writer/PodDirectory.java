package io.kvidx.daemon.writer;

import org.agrona.collections.IntArrayQueue;
import org.agrona.collections.Object2IntHashMap;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * Gives every live pod id seen by any transport a <em>pod handle</em>: a dense pod number that is recycled once the
 * pod is gone, and the number's generation, bumped each time the number is freed.
 *
 * <pre>
 *   handle (int, never negative):
 *    31  30                    16 15                      0
 *   +---+------------------------+-------------------------+
 *   | 0 | generation (15 bits)   | pod number (16 bits)    |
 *   +---+------------------------+-------------------------+
 * </pre>
 *
 * <p>The pod number picks the pod's writer agent ({@code number % writers}: sticky for as long as the number is
 * held) and indexes per-pod state on the writers and transports; it is not the index slot (which the
 * {@link io.kvidx.daemon.index.IndexWriter} hands out and frees after its sweep). Transports and writers keep
 * handles, not names: a handle whose number was freed, and maybe given to another pod since, is no longer
 * {@link #isCurrent current}, so that nothing meant for the old pod reaches the new one. A pod id seen again after
 * its number was freed gets a fresh handle.
 *
 * <p>A number is freed by {@link #release}: the pod's writer calls it once the pod went down (timeout, PodDown, a
 * dropped subscription) or stayed silent unregistered for the pod timeout; the Aeron transport calls it right after
 * queuing a PodDown, so that the pod's next message gets a new handle and is queued behind it. A {@link #pin pinned}
 * pod (an engine configured with a fixed pod id) keeps its number while down. With no pod timeout, only PodDown and
 * dropped subscriptions free numbers. Memory is bounded by the live pods: numbers are taken from the free list
 * first, so the arrays grow only to the largest number of pods live at once, at most {@code maxPods}.
 *
 * <p>At most {@value #MAX_NUMBERS} ids are live at once because the number is the handle's low 16 bits; the
 * generation's 15 bits make a stale handle look current again only after its number was freed 32,768 times while
 * the handle was held (the free list is first-in first-out, so every free number is reused before this one is
 * again).
 *
 * <p><b>Note:</b> thread safe: assignment, pinning and release take the directory's lock (any thread; transports
 * assign, writers release); {@link #isCurrent}, {@link #podId} and {@link #model} take no lock (acquire reads of
 * what the lock's holder stored with release).
 */
public final class PodDirectory {
    /** Bits of the pod number in a handle. */
    public static final int NUMBER_BITS = 16;
    /** Mask of the pod number in a handle. */
    public static final int NUMBER_MASK = (1 << NUMBER_BITS) - 1;
    /** Most pod ids live at once: every number of {@link #NUMBER_BITS} bits. */
    public static final int MAX_NUMBERS = 1 << NUMBER_BITS;
    /** Default largest number of pod ids live at once (all numbers; memory grows only with the live pods). */
    public static final int MAX_PODS_DEFAULT = MAX_NUMBERS;

    private static final int GENERATION_MASK = 0x7FFF;
    private static final int FREE = -1;
    private static final int INITIAL_CAPACITY = 16;
    private static final VarHandle INTS = MethodHandles.arrayElementVarHandle(int[].class);
    private static final VarHandle STRINGS = MethodHandles.arrayElementVarHandle(String[].class);

    private final int maxPods;
    /** Pod id to its handle; live ids only. Guarded by this. */
    private final Object2IntHashMap<String> handlesById = new Object2IntHashMap<>(FREE);
    /** Freed numbers, reused first in first out. Guarded by this. */
    private final IntArrayQueue free = new IntArrayQueue(FREE);
    /** Per number: its next handle's generation. Guarded by this. */
    private int[] generations = new int[INITIAL_CAPACITY];
    /** Per number: how many pins hold it. Guarded by this. */
    private int[] pins = new int[INITIAL_CAPACITY];
    /** Per number: its current handle, or {@link #FREE}; written with release under the lock, read with acquire. */
    private volatile int[] handles = filled(INITIAL_CAPACITY);
    private volatile String[] ids = new String[INITIAL_CAPACITY];
    private volatile String[] models = new String[INITIAL_CAPACITY];
    /** Numbers handed out so far (the arrays' used length). Guarded by this. */
    private int numbers;
    private int count;

    /**
     * @param maxPods largest number of pod ids live at once, 1 .. {@value #MAX_NUMBERS}.
     */
    public PodDirectory(final int maxPods) {
        if (maxPods < 1 || maxPods > MAX_NUMBERS) {
            throw new IllegalArgumentException("maxPods must be in [1, " + MAX_NUMBERS + "]: " + maxPods);
        }
        this.maxPods = maxPods;
    }

    /**
     * @param handle a pod handle.
     * @return its pod number.
     */
    public static int number(final int handle) {
        return handle & NUMBER_MASK;
    }

    /**
     * @param handle a pod handle.
     * @return its generation.
     */
    public static int generation(final int handle) {
        return (handle >>> NUMBER_BITS) & GENERATION_MASK;
    }

    /**
     * Returns the pod's handle, assigning a free number on first sight (or first sight since its number was freed).
     * The first non-null model given wins.
     *
     * @param podId pod id.
     * @param model model name, or null when unknown.
     * @return the pod's handle, or -1 when {@code maxPods} ids are live already.
     */
    public synchronized int podNumber(final String podId, final String model) {
        final int known = handlesById.getValue(podId);
        if (known != FREE) {
            final int n = number(known);
            if (model != null && STRINGS.getAcquire(models, n) == null) {
                STRINGS.setRelease(models, n, model);
            }
            return known;
        }
        if (count == maxPods) {
            return -1;
        }
        final int n = free.isEmpty() ? numbers++ : free.pollInt();
        if (n >= handles.length) {
            grow(n + 1);
        }
        final int handle = (generations[n] << NUMBER_BITS) | n;
        STRINGS.setRelease(ids, n, podId);
        STRINGS.setRelease(models, n, model);
        pins[n] = 0;
        INTS.setRelease(handles, n, handle);
        handlesById.put(podId, handle);
        count++;
        return handle;
    }

    /**
     * {@link #podNumber} and one more pin: a pinned pod keeps its number while it is down (it is not
     * {@link #release released}) until every pin is {@link #unpin undone}. For engines registered with a fixed
     * pod id.
     *
     * @param podId pod id.
     * @param model model name, or null when unknown.
     * @return the pod's handle, or -1 when {@code maxPods} ids are live already (nothing pinned then).
     */
    public synchronized int pin(final String podId, final String model) {
        final int handle = podNumber(podId, model);
        if (handle >= 0) {
            pins[number(handle)]++;
        }
        return handle;
    }

    /**
     * Undoes one {@link #pin}; no-op for a handle that is not current or not pinned. The pod's writer frees the
     * number once the pod is down and silent.
     *
     * @param handle a handle {@link #pin} returned.
     */
    public synchronized void unpin(final int handle) {
        final int n = number(handle);
        if (isCurrent(handle) && pins[n] > 0) {
            pins[n]--;
        }
    }

    /**
     * Frees the handle's number when the handle is current and the pod unpinned: the id is forgotten, the number's
     * generation bumped (the handle and every copy of it are no longer current) and the number queued for reuse.
     *
     * @param handle a pod handle.
     * @return true when the number was freed.
     */
    public synchronized boolean release(final int handle) {
        final int n = number(handle);
        if (!isCurrent(handle) || pins[n] > 0) {
            return false;
        }
        INTS.setRelease(handles, n, FREE);
        generations[n] = (generations[n] + 1) & GENERATION_MASK;
        handlesById.removeKey((String) STRINGS.getAcquire(ids, n));
        STRINGS.setRelease(ids, n, null);
        STRINGS.setRelease(models, n, null);
        free.addInt(n);
        count--;
        return true;
    }

    /**
     * Lock free: one acquire read.
     *
     * @param handle a pod handle (any int).
     * @return true while the handle's number still belongs to the pod it was handed out for.
     */
    public boolean isCurrent(final int handle) {
        final int[] h = handles;
        final int n = number(handle);
        return handle >= 0 && n < h.length && (int) INTS.getAcquire(h, n) == handle;
    }

    /**
     * By number: for a handle that is no longer current, the id of the pod holding its number now, or null.
     *
     * @param handle a pod handle.
     * @return its pod id, or null when its number is free.
     */
    public String podId(final int handle) {
        final String[] i = ids;
        final int n = number(handle);
        return handle >= 0 && n < i.length ? (String) STRINGS.getAcquire(i, n) : null;
    }

    /**
     * By number, as {@link #podId}.
     *
     * @param handle a pod handle.
     * @return its model, or null.
     */
    public String model(final int handle) {
        final String[] m = models;
        final int n = number(handle);
        return handle >= 0 && n < m.length ? (String) STRINGS.getAcquire(m, n) : null;
    }

    /**
     * @return number of pod ids live now.
     */
    public synchronized int count() {
        return count;
    }

    /**
     * @return numbers handed out so far: the largest number of ids that were live at once.
     */
    public synchronized int numbersHandedOut() {
        return numbers;
    }

    /**
     * @return largest number of pod ids live at once.
     */
    public int maxPods() {
        return maxPods;
    }

    private void grow(final int min) {
        final int length = Math.min(MAX_NUMBERS, Math.max(min, handles.length * 2));
        generations = Arrays.copyOf(generations, length);
        pins = Arrays.copyOf(pins, length);
        // Readers holding an old array see a value that was current when they read the field; the new arrays are
        // filled before they are published.
        final int[] h = Arrays.copyOf(handles, length);
        Arrays.fill(h, handles.length, length, FREE);
        ids = Arrays.copyOf(ids, length);
        models = Arrays.copyOf(models, length);
        handles = h;
    }

    private static int[] filled(final int length) {
        final int[] h = new int[length];
        Arrays.fill(h, FREE);
        return h;
    }
}
