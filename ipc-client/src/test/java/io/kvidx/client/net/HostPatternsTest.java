package io.kvidx.client.net;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The hosts registrations may name: CIDR blocks against IP literals, globs against names, nothing resolved. */
class HostPatternsTest {
    @Test
    void shouldMatchGlobs() {
        assertTrue(HostPatterns.glob("pod-a", "pod-a"));
        assertFalse(HostPatterns.glob("pod-a", "pod-ab"));
        assertTrue(HostPatterns.glob("pod-*", "pod-"));
        assertTrue(HostPatterns.glob("pod-*", "pod-7#1"));
        assertFalse(HostPatterns.glob("pod-*", "xpod-7"));
        assertTrue(HostPatterns.glob("*", ""));
        assertTrue(HostPatterns.glob("10.0.0.?:8000", "10.0.0.2:8000"));
        assertFalse(HostPatterns.glob("10.0.0.?:8000", "10.0.0.12:8000"));
        assertTrue(HostPatterns.glob("a*b*c", "aXXbYYbc"));
        assertFalse(HostPatterns.glob("a*b*c", "aXXbYYb"));
        assertTrue(HostPatterns.glob("**x", "yyx"));
    }


    @Test
    void shouldMatchCidrBlocksAndHostGlobs() {
        final HostPatterns h = new HostPatterns(List.of("10.0.0.0/8", "fd00::/8", "*.vllm.svc.cluster.local",
            "engine-?"));
        assertTrue(h.allows("tcp://10.1.2.3:5557"));
        assertFalse(h.allows("tcp://11.1.2.3:5557"));
        assertTrue(h.allows("tcp://[fd12::7]:5557"));
        assertFalse(h.allows("tcp://[fe80::1]:5557"));
        assertTrue(h.allows("tcp://vllm-0.vllm.svc.cluster.local:5557"));
        assertTrue(h.allows("tcp://VLLM-0.vllm.svc.cluster.local:5557"), "host names are case-insensitive");
        assertFalse(h.allows("tcp://evil.example:5557"));
        assertTrue(h.allows("tcp://engine-a:5557"));
        assertFalse(h.allows("tcp://engine-ab:5557"));
        assertFalse(h.allows("tcp://10.1.2.3.evil.example:5557"), "a name is not an address");
        assertTrue(h.allows("ipc:///tmp/engine.sock"), "ipc is local");
        assertFalse(h.allows("tcp://:5557"), "no host");
        assertTrue(h.allows("http://10.9.8.7:8000/v1"), "URLs too");
        assertTrue(h.allowsHost("[fd00::1]"));
        assertTrue(h.allowsHost("fd00::1"));
        assertFalse(h.allowsHost(null));
        assertTrue(new HostPatterns(List.of()).allows("tcp://anything:1"));
        assertTrue(new HostPatterns(List.of("0.0.0.0/0")).allows("tcp://203.0.113.9:1"));
        assertFalse(new HostPatterns(List.of("0.0.0.0/0")).allows("tcp://[::1]:1"), "v4 blocks hold no v6");
        for (final String bad : new String[] {"10.0.0.0/33", "10.0.0.0/x", "host/8", " "}) {
            assertThrows(IllegalArgumentException.class, () -> new HostPatterns(List.of(bad)), bad);
        }
    }
}
