package io.kvidx.daemon.config;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.YieldingIdleStrategy;

import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The idle strategies an agent can be given, by name: what its thread does when a duty cycle found no work.
 * <ul>
 *     <li>{@code busy-spin}: spins ({@code Thread.onSpinWait}); lowest latency, burns its CPU: only on a core of its
 *     own.</li>
 *     <li>{@code yield}: {@code Thread.yield()}; gives the core to another runnable thread.</li>
 *     <li>{@code backoff}: spins, then yields, then parks from 1 us doubling to 1 ms. A writer's park is cut short by
 *     the thread that queues it a message ({@code WriterPool#wakeableBackoff}).</li>
 *     <li>{@code backoff-<N>us}: the same, parking at most N us (1..1000): an idle thread wakes sooner for a new
 *     message (a park of up to 1 ms shows in event-to-visible times), at the cost of more wake-ups while idle.</li>
 *     <li>{@code sleep-<N>ms}: sleeps N ms (1..1000); for background work.</li>
 * </ul>
 * Older spellings are accepted: {@code busy}, {@code yielding}, {@code sleeping} (= {@code sleep-1ms}).
 */
public final class IdleStrategies {
    /** Busy spin. */
    public static final String BUSY_SPIN = "busy-spin";
    /** Yield. */
    public static final String YIELD = "yield";
    /** Backoff. */
    public static final String BACKOFF = "backoff";
    /** Prefix of {@code backoff-<N>us}. */
    public static final String BACKOFF_PREFIX = "backoff-";
    /** Longest park of {@code backoff-<N>us}, us. */
    public static final int MAX_BACKOFF_US = 1000;
    /** Prefix of {@code sleep-<N>ms}. */
    public static final String SLEEP_PREFIX = "sleep-";
    /** Longest sleep. */
    public static final int MAX_SLEEP_MS = 1000;
    /** What is accepted, for error messages. */
    public static final String ACCEPTED = BUSY_SPIN + ", " + YIELD + ", " + BACKOFF + ", " + BACKOFF_PREFIX
        + "<N>us with N in [1, " + MAX_BACKOFF_US + "] or " + SLEEP_PREFIX + "<N>ms with N in [1, " + MAX_SLEEP_MS
        + "]";

    private IdleStrategies() {
    }

    /**
     * @param key  YAML key, for the error.
     * @param name an idle strategy name (or an older spelling).
     * @return its canonical name.
     * @throws ConfigException when the name is unknown.
     */
    public static String canonical(final String key, final String name) {
        if (name == null) {
            throw new ConfigException(key, "must be one of " + ACCEPTED + ": null");
        }
        return switch (name) {
            case BUSY_SPIN, "busy" -> BUSY_SPIN;
            case YIELD, "yielding" -> YIELD;
            case BACKOFF -> BACKOFF;
            case "sleeping" -> SLEEP_PREFIX + "1ms";
            default -> {
                final int us = backoffUs(name);
                if (us >= 1 && us <= MAX_BACKOFF_US) {
                    yield BACKOFF_PREFIX + us + "us";
                }
                final int ms = sleepMs(name);
                if (ms < 1 || ms > MAX_SLEEP_MS) {
                    throw new ConfigException(key, "must be one of " + ACCEPTED + ": " + name);
                }
                yield SLEEP_PREFIX + ms + "ms";
            }
        };
    }

    /**
     * @param canonical a canonical name ({@link #canonical(String, String)}).
     * @return a supplier of that idle strategy (each agent needs its own instance).
     */
    public static Supplier<IdleStrategy> supplier(final String canonical) {
        final long[] backoff = backoff(canonical);
        if (backoff != null) {
            return () -> new BackoffIdleStrategy(backoff[0], backoff[1], backoff[2], backoff[3]);
        }
        return switch (canonical) {
            case BUSY_SPIN -> BusySpinIdleStrategy::new;
            case YIELD -> YieldingIdleStrategy::new;
            default -> {
                final long ms = sleepMs(canonical);
                if (ms < 1) {
                    throw new IllegalArgumentException("not a canonical idle strategy: " + canonical);
                }
                yield () -> new SleepingMillisIdleStrategy(ms);
            }
        };
    }

    /**
     * The steps of a backoff strategy: spins, then yields, then parks from the shortest period, doubling up to the
     * longest.
     *
     * @param canonical a canonical name ({@link #canonical(String, String)}).
     * @return {spins, yields, shortest park ns, longest park ns} for {@link #BACKOFF} and {@code backoff-<N>us}, else
     * null.
     */
    public static long[] backoff(final String canonical) {
        final long maxParkNs = BACKOFF.equals(canonical) ? TimeUnit.MILLISECONDS.toNanos(1)
            : TimeUnit.MICROSECONDS.toNanos(backoffUs(canonical));
        return maxParkNs > 0 ? new long[] {10, 20, TimeUnit.MICROSECONDS.toNanos(1), maxParkNs} : null;
    }

    private static int backoffUs(final String name) {
        if (!name.startsWith(BACKOFF_PREFIX) || !name.endsWith("us")) {
            return -1;
        }
        final String digits = name.substring(BACKOFF_PREFIX.length(), name.length() - 2);
        if (digits.isEmpty() || digits.length() > 4 || !digits.chars().allMatch(Character::isDigit)) {
            return -1;
        }
        return Integer.parseInt(digits);
    }

    private static int sleepMs(final String name) {
        if (!name.startsWith(SLEEP_PREFIX) || !name.endsWith("ms")) {
            return -1;
        }
        final String digits = name.substring(SLEEP_PREFIX.length(), name.length() - 2);
        if (digits.isEmpty() || digits.length() > 4 || !digits.chars().allMatch(Character::isDigit)) {
            return -1;
        }
        return Integer.parseInt(digits);
    }
}
