package io.kvidx.daemon;

import com.sun.security.auth.module.UnixSystem;
import io.kvidx.ffm.SharedFiles;

/**
 * Groups the tests may give files.
 */
public final class TestGroups {
    private TestGroups() {
    }

    /**
     * @return a group this user may give files other than its primary group when there is one (a supplementary
     * group from {@code id -G}, or any existing group for root), else the primary group; as a name or numeric id.
     */
    public static String other() {
        final UnixSystem unix = new UnixSystem();
        for (final long gid : unix.getGroups()) {
            if (gid != unix.getGid()) {
                return Long.toString(gid);
            }
        }
        if (unix.getUid() == 0) {
            for (final String candidate : new String[] {"1", "2", "100"}) {
                try {
                    SharedFiles.forGroup(candidate);
                    return candidate;
                } catch (final IllegalArgumentException ex) {
                    // Try the next one.
                }
            }
        }
        return Long.toString(unix.getGid());
    }

    /**
     * @return true when {@link #other()} differs from the primary group, so a test can see the group was set.
     */
    public static boolean otherDiffersFromPrimary() {
        return !other().equals(Long.toString(new UnixSystem().getGid()));
    }
}
