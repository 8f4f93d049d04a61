/**
 * The shared-memory block index: its layout ({@link io.kvidx.client.index.IndexDescriptor}), the read-only
 * {@link io.kvidx.client.index.IndexReader} a router maps, and the prefix query. JDK only: no third-party class
 * is loaded on this path.
 */
package io.kvidx.client.index;
