package io.kvidx.daemon.lifecycle;

import com.sun.jdi.AbsentInformationException;
import com.sun.jdi.Bootstrap;
import com.sun.jdi.ClassObjectReference;
import com.sun.jdi.ClassType;
import com.sun.jdi.Field;
import com.sun.jdi.Location;
import com.sun.jdi.Method;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.AttachingConnector;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.ClassPrepareEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.event.VMDeathEvent;
import com.sun.jdi.event.VMDisconnectEvent;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.ClassPrepareRequest;
import com.sun.jdi.request.EventRequest;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Stops a daemon process at an exact point of its code (JDI over a JDWP socket): a breakpoint suspends every thread
 * of the target when a method is entered, or when a source line is reached, after a given number of hits. The test
 * then kills the frozen process with SIGKILL (a crash exactly there) or lets readers look at the file while the
 * writer is frozen mid-change (heartbeat stopped), then resumes it.
 *
 * <p>Source lines are found by searching the main source file for a text, so that a breakpoint follows the code
 * when lines move.
 */
final class Debugger implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("Listening for transport dt_socket at address: (\\d+)");

    private final VirtualMachine vm;
    private final Thread events;
    private final List<Point> points = new ArrayList<>();
    private volatile boolean closed;

    /** A breakpoint: where, and the latch counted down when the target stops there. */
    static final class Point {
        final String className;
        final String method;
        final String lineText;
        final int hit;
        final CountDownLatch reached = new CountDownLatch(1);
        volatile String where;
        /** The thread that stopped here (suspended by the breakpoint until the target is resumed). */
        volatile ThreadReference thread;

        private Point(final String className, final String method, final String lineText, final int hit) {
            this.className = className;
            this.method = method;
            this.lineText = lineText;
            this.hit = hit;
        }

        /**
         * Waits, bounded, for the target to stop here.
         *
         * @return true when it did.
         */
        boolean await(final long timeoutMs) throws InterruptedException {
            return reached.await(timeoutMs, TimeUnit.MILLISECONDS);
        }

        @Override
        public String toString() {
            return className + "." + method + (lineText == null ? "" : " at '" + lineText + "'") + " (hit " + hit
                + ")";
        }
    }

    /**
     * @return the JVM option that makes a process wait, before its main method, for a debugger on a free loopback
     * port it prints to its log.
     */
    static String agentOption() {
        return "-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0";
    }

    /**
     * Attaches to a process started with {@link #agentOption()}, reading its port from its log. The process stays
     * suspended until {@link #resume()}: arm breakpoints first.
     */
    static Debugger attach(final Path log, final long timeoutMs) throws Exception {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        Matcher m = LISTENING.matcher("");
        while (!m.find()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("no JDWP port in " + log + ": " + ChildProcesses.tail(log, 20));
            }
            Thread.sleep(10);
            m = LISTENING.matcher(ChildProcesses.read(log));
        }
        final AttachingConnector connector = Bootstrap.virtualMachineManager().attachingConnectors().stream()
            .filter(c -> "com.sun.jdi.SocketAttach".equals(c.name())).findFirst().orElseThrow();
        final Map<String, Connector.Argument> args = connector.defaultArguments();
        args.get("hostname").setValue("127.0.0.1");
        args.get("port").setValue(m.group(1));
        args.get("timeout").setValue(Long.toString(Math.max(1_000, deadline - System.currentTimeMillis())));
        return new Debugger(connector.attach(args));
    }

    private Debugger(final VirtualMachine vm) {
        this.vm = vm;
        this.events = new Thread(this::dispatch, "jdi-events");
        events.setDaemon(true);
        events.start();
    }

    /**
     * Stops every thread of the target when {@code method} of {@code className} is entered for the
     * {@code hit}-th time (counting from when this is called).
     */
    Point breakAtMethod(final String className, final String method, final int hit) {
        return add(new Point(className, method, null, hit));
    }

    /**
     * Stops every thread of the target when the first line of {@code method} that contains {@code lineText}
     * (in the main source file of {@code className}) is reached for the {@code hit}-th time.
     */
    Point breakAtLine(final String className, final String method, final String lineText, final int hit) {
        return add(new Point(className, method, lineText, hit));
    }

    private Point add(final Point point) {
        synchronized (points) {
            points.add(point);
        }
        final List<ReferenceType> loaded = vm.classesByName(point.className);
        if (loaded.isEmpty()) {
            final ClassPrepareRequest prepare = vm.eventRequestManager().createClassPrepareRequest();
            prepare.addClassFilter(point.className);
            prepare.putProperty("point", point);
            prepare.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
            prepare.enable();
        } else {
            arm(point, loaded.get(0));
        }
        return point;
    }

    private void arm(final Point point, final ReferenceType type) {
        final List<Method> methods = type.methodsByName(point.method);
        if (methods.isEmpty()) {
            throw new AssertionError("no method " + point);
        }
        for (final Method method : methods) {
            final Location location = point.lineText == null ? method.location() : line(method, point);
            if (location == null) {
                continue;
            }
            final BreakpointRequest request = vm.eventRequestManager().createBreakpointRequest(location);
            request.setSuspendPolicy(EventRequest.SUSPEND_ALL);
            request.addCountFilter(point.hit);
            request.putProperty("point", point);
            request.enable();
        }
    }

    private static Location line(final Method method, final Point point) {
        final int line = sourceLine(point.className, point.lineText);
        try {
            for (final Location l : method.allLineLocations()) {
                if (l.lineNumber() == line) {
                    return l;
                }
            }
        } catch (final AbsentInformationException ex) {
            throw new AssertionError("compiled without line numbers: " + point, ex);
        }
        return null;
    }

    /**
     * @return the 1-based line of the main source file of the class that contains the text.
     */
    static int sourceLine(final String className, final String text) {
        final Path source = Path.of("src/main/java", className.replace('.', '/') + ".java");
        try {
            final List<String> lines = Files.readAllLines(source);
            for (int i = 0; i < lines.size(); i++) {
                if (lines.get(i).contains(text)) {
                    return i + 1;
                }
            }
        } catch (final IOException ex) {
            throw new AssertionError("cannot read " + source, ex);
        }
        throw new AssertionError("no line with '" + text + "' in " + source);
    }

    private void dispatch() {
        try {
            while (!closed) {
                final EventSet set = vm.eventQueue().remove(200);
                if (set == null) {
                    continue;
                }
                boolean resume = true;
                for (final Event e : set) {
                    if (e instanceof ClassPrepareEvent prepare) {
                        final Point point = (Point) e.request().getProperty("point");
                        if (point != null) {
                            arm(point, prepare.referenceType());
                        }
                    } else if (e instanceof BreakpointEvent hit) {
                        final Point point = (Point) e.request().getProperty("point");
                        e.request().disable();
                        point.where = hit.location() + " in thread " + hit.thread().name();
                        point.thread = hit.thread();
                        point.reached.countDown();
                        // Stays suspended: the test kills or resumes it.
                        resume = false;
                    } else if (e instanceof VMDeathEvent || e instanceof VMDisconnectEvent) {
                        return;
                    }
                }
                if (resume) {
                    set.resume();
                }
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        } catch (final com.sun.jdi.VMDisconnectedException ex) {
            // the target died (killed): nothing more to do
        }
    }

    /**
     * While the target is stopped at a breakpoint, sets fields of the object whose method it stopped in (the top
     * frame's {@code this}) to one new instance of a class on the target's class path, loaded by that object's class
     * loader and made by its no-argument constructor on the stopped thread (the other threads stay suspended). Used to
     * arm a main class's test hooks (a fault to run) in a real process at an exact point.
     *
     * @param point     a point the target has reached ({@link Point#await}) and not been resumed from since.
     * @param className the class to instantiate in the target.
     * @param fields    the fields of {@code this} to set to the instance.
     */
    void setFieldsToNew(final Point point, final String className, final String... fields) throws Exception {
        final ThreadReference thread = point.thread;
        if (thread == null) {
            throw new AssertionError("the target has not stopped at " + point);
        }
        final ObjectReference self = thread.frame(0).thisObject();
        if (self == null) {
            throw new AssertionError("stopped in a static method at " + point.where);
        }
        final ClassType classClass = (ClassType) vm.classesByName("java.lang.Class").get(0);
        final Method forName = classClass.concreteMethodByName("forName",
            "(Ljava/lang/String;ZLjava/lang/ClassLoader;)Ljava/lang/Class;");
        final ClassObjectReference loaded = (ClassObjectReference) classClass.invokeMethod(thread, forName,
            List.of(vm.mirrorOf(className), vm.mirrorOf(true), self.referenceType().classLoader()),
            ObjectReference.INVOKE_SINGLE_THREADED);
        final ClassType type = (ClassType) loaded.reflectedType();
        final ObjectReference instance = type.newInstance(thread, type.concreteMethodByName("<init>", "()V"),
            List.of(), ObjectReference.INVOKE_SINGLE_THREADED);
        instance.disableCollection();
        try {
            for (final String name : fields) {
                final Field field = self.referenceType().fieldByName(name);
                if (field == null) {
                    throw new AssertionError("no field " + name + " in " + self.referenceType().name());
                }
                self.setValue(field, instance);
            }
        } finally {
            instance.enableCollection();
        }
    }

    /** Resumes every thread of the target. */
    void resume() {
        vm.resume();
    }

    @Override
    public void close() {
        closed = true;
        try {
            vm.dispose();
        } catch (final com.sun.jdi.VMDisconnectedException ex) {
            // already gone
        }
        try {
            events.join(2_000);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
