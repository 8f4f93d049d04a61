package io.kvidx.daemon.writer;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Gives every pod id seen by any transport a dense pod number for the process's lifetime. The pod number picks
 * the pod's writer agent (sticky assignment) and indexes per-pod state; it is not the index slot (which the
 * {@link io.kvidx.daemon.index.IndexWriter} hands out and may change after a pod goes down and comes back).
 *
 * <p><b>Note:</b> thread safe; lookups by number take no lock after registration has been published.
 */
public final class PodDirectory {
    /** Default largest number of distinct pod ids. */
    public static final int MAX_PODS_DEFAULT = 4096;

    private final Map<String, Integer> numbers = new HashMap<>();
    private volatile String[] ids;
    private volatile String[] models;
    private final int maxPods;
    private int count;

    /**
     * @param maxPods largest number of distinct pod ids.
     */
    public PodDirectory(final int maxPods) {
        this.maxPods = maxPods;
        this.ids = new String[16];
        this.models = new String[16];
    }

    /**
     * Returns the pod's number, assigning the next one on first sight. The first non-null model given wins.
     *
     * @param podId pod id.
     * @param model model name, or null when unknown.
     * @return the pod number, or -1 when the directory is full.
     */
    public synchronized int podNumber(final String podId, final String model) {
        final Integer n = numbers.get(podId);
        if (n != null) {
            if (models[n] == null && model != null) {
                final String[] m = models.clone();
                m[n] = model;
                models = m;
            }
            return n;
        }
        if (count == maxPods) {
            return -1;
        }
        final int number = count++;
        String[] i = ids;
        String[] m = models;
        if (number >= i.length) {
            i = Arrays.copyOf(i, i.length * 2);
            m = Arrays.copyOf(m, m.length * 2);
        } else {
            i = i.clone();
            m = m.clone();
        }
        i[number] = podId;
        m[number] = model;
        models = m;
        ids = i;
        numbers.put(podId, number);
        return number;
    }

    /**
     * @param podNumber a pod number.
     * @return its pod id.
     */
    public String podId(final int podNumber) {
        return ids[podNumber];
    }

    /**
     * @param podNumber a pod number.
     * @return its model, or null.
     */
    public String model(final int podNumber) {
        final String[] m = models;
        return podNumber < m.length ? m[podNumber] : null;
    }

    /**
     * @return number of pods known.
     */
    public synchronized int count() {
        return count;
    }

    /**
     * @return largest number of pods.
     */
    public int maxPods() {
        return maxPods;
    }
}
