/**
 * jcstress tests of kvidx's shared-memory publication protocols, each driving the daemon's real writer
 * ({@code IndexWriter}, {@code TierMapWriter}) against the router's real reader ({@code IndexReader},
 * {@code TierMapReader}) on small real cells (mapped files, {@link io.kvidx.jcstress.Cell}): entry insert and
 * delete/shift vs lookup, pod table register vs read, tier map insert, remove/shift and reset vs lookup. Their
 * forbidden outcomes must never appear. The same tests also prove that each protocol step matters: run in JVMs that
 * leave one step out of the product's own code ({@code io.kvidx.client.index.ProtocolFaults},
 * {@code -Dkvidx.protocol.omit=<step>}), they must show them. Run with {@code ./kvidx jcstress} and
 * {@code ./kvidx jcstress-broken}; docs/testing.md has the results.
 */
package io.kvidx.jcstress;
