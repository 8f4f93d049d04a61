/**
 * The router's bounded, TTL'd record of its own recent picks (speculative prefix inserts, approximate mode).
 */
package io.kvidx.routing.overlay;
