package io.kvidx.daemon.lifecycle;

/**
 * A fault a {@link Debugger} puts into a daemon process's test hooks ({@code EntryTable.deleteFault},
 * {@code EntryTable.repairFault}): running it throws, as a change or a repair that fails would.
 */
final class InjectedFault implements Runnable {
    @Override
    public void run() {
        throw new IllegalStateException("injected by a debugger: this step fails");
    }
}
