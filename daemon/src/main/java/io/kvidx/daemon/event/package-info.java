/**
 * The daemon's engine-neutral events, between the transports and the writers: the {@link
 * io.kvidx.daemon.event.BlockEvent} view, the {@link io.kvidx.daemon.event.EventDecoder} every wire format's decoder
 * implements, and the {@link io.kvidx.daemon.event.BlockEventListener} the writers apply events through. Depends on
 * nothing else of the daemon: the ingest packages decode into it, the writer package applies from it.
 */
package io.kvidx.daemon.event;
