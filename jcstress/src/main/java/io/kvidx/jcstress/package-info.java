/**
 * jcstress tests of kvidx's shared-memory publication protocols, each driving the daemon's real writer
 * ({@code IndexWriter}, {@code TierMapWriter}) against the router's real reader ({@code IndexReader},
 * {@code TierMapReader}) on small real cells (mapped files, {@link io.kvidx.jcstress.Cell}): entry insert and
 * delete/shift vs lookup, pod table register vs read, tier map insert, remove/shift and reset vs lookup. Their
 * forbidden outcomes must never appear; the twins in {@link io.kvidx.jcstress.broken} remove one protocol step and
 * show them. Run with {@code ./kvidx jcstress}; docs/testing.md has the results.
 */
package io.kvidx.jcstress;
