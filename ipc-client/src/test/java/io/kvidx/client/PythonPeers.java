package io.kvidx.client;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The rule for tests that need /usr/bin/python3 and Debian Python packages as peers: skipped (with what to install)
 * on a developer machine without them, failed when {@code CI} is set, so CI never goes green with them skipped.
 * The daemon module's tests apply the same rule through its {@code ChildProcesses.requirePython}.
 */
public final class PythonPeers {
    private PythonPeers() {
    }

    /**
     * @param available whether the peer is there.
     * @param why       what is missing and how to install it.
     */
    public static void require(final boolean available, final String why) {
        if (!available && System.getenv("CI") != null) {
            throw new AssertionError("CI is set and " + why);
        }
        assumeTrue(available, why);
    }
}
