package io.kvidx.routing;

/**
 * The stages of one selection pass, in order.
 */
public enum Stage {
    /** Derive request facts (block keys, session key, prefix depths). */
    PREPARE,
    /** Remove pods that cannot serve the request. */
    FILTER,
    /** Score each remaining pod in [0, 1]; the selector sums weight x score. */
    SCORE,
    /** Choose one pod. */
    PICK
}
