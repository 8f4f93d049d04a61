package io.kvidx.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;

/**
 * Approximate retained heap: used heap after repeated full GCs (System.gc is a request; good enough for MiB-scale
 * differences, not for exact byte counts).
 */
final class HeapProbe {
    private HeapProbe() {
    }

    static long usedAfterGc() {
        final MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
        }
        return used;
    }
}
