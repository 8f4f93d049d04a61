package io.kvidx.routing;

import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pod ids pasted into {@code pod-url-template} come from the wire: a URL is used only on a host the template may
 * reach, by default the private and loopback blocks and names of the template's own domain.
 */
class PodUrlTemplateTest {
    @Test
    void shouldReachPrivateAddressesButNotMetadataPublicOrNamesByDefault() {
        final PodUrlTemplate t = PodUrlTemplate.of("http://{pod}:8000", List.of());
        for (final String ok : new String[] {"10.1.2.3", "172.16.0.9", "172.31.255.1", "192.168.7.7", "100.64.1.1",
            "127.0.0.1"}) {
            assertEquals(URI.create("http://" + ok + ":8000"), t.url(ok), ok);
        }
        for (final String no : new String[] {"169.254.169.254", "172.32.0.1", "8.8.8.8", "evil.example", "vllm-0",
            "", "10.1.2.3.evil.example"}) {
            assertNull(t.url(no), no);
        }
    }

    @Test
    void shouldReachNamesOfTheTemplatesOwnDomain() {
        final PodUrlTemplate t = PodUrlTemplate.of("http://{pod}.vllm:8000", List.of());
        assertEquals(URI.create("http://vllm-0.vllm:8000"), t.url("vllm-0"));
        assertEquals(URI.create("http://a.b.vllm:8000"), t.url("a.b"), "still under .vllm");
        assertNull(t.url("x:1"), "a port is no host");
        final PodUrlTemplate gateway = PodUrlTemplate.of("https://gateway.internal/pods/{pod}/", List.of());
        assertEquals(URI.create("https://gateway.internal/pods/p-1/"), gateway.url("p-1"));
    }

    @Test
    void shouldReachOnlyTheConfiguredHostsWhenGiven() {
        final PodUrlTemplate t = PodUrlTemplate.of("http://{pod}.vllm:8000", List.of("10.0.0.0/8"));
        assertNull(t.url("vllm-0"), "pod-url-hosts replaces the default, the template's domain included");
        final PodUrlTemplate ips = PodUrlTemplate.of("http://{pod}:8000", List.of("10.0.0.0/8", "*.pods.local"));
        assertEquals(URI.create("http://10.9.9.9:8000"), ips.url("10.9.9.9"));
        assertNull(ips.url("192.168.1.1"));
        assertEquals(URI.create("http://a.pods.local:8000"), ips.url("a.pods.local"));
        assertEquals(List.of("10.0.0.0/8", "*.pods.local"), ips.hosts());
    }

    @Test
    void shouldRefuseABadTemplateOrHostsByName() {
        assertNull(PodUrlTemplate.of(null, List.of()));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PodUrlTemplate.of("http://h:8000",
            List.of())).getMessage().contains("{pod}"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PodUrlTemplate.of("ftp://{pod}/",
            List.of())).getMessage().contains("http(s) URL"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PodUrlTemplate.of("http://{pod}:8000",
            List.of("10.0.0.0/40"))).getMessage().contains("pod-url-hosts"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PodUrlTemplate.of(null,
            List.of("10.0.0.0/8"))).getMessage().contains("pod-url-template"));
    }
}
