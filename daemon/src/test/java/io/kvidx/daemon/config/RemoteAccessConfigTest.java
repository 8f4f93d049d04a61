package io.kvidx.daemon.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Transports that accept anyone who reaches them stay on loopback unless the operator opts in: an Aeron UDP channel
 * or a metrics endpoint on a wildcard or non-loopback address is refused at conclude without
 * {@code aeron.allowRemote} / {@code metricsAllowRemote}.
 */
@Timeout(10)
class RemoteAccessConfigTest {
    @TempDir
    Path dir;

    private DaemonContext context() {
        return new DaemonContext().dir(dir);
    }

    @Test
    void shouldRefuseWildcardAeronUdpChannelWithoutTheOptIn() {
        for (final String channel : new String[] {"aeron:udp?endpoint=0.0.0.0:40123", "aeron:udp?endpoint=[::]:40123",
            "aeron:udp?endpoint=*:40123", "aeron:udp?endpoint=10.0.0.7:40123", "aeron:udp?endpoint=engine-host:40123",
            "aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1", "aeron:udp?control-mode=manual",
            "aeron:udp?endpoint=127.0.0.1:40123|interface=10.0.0.0/8"}) {
            final DaemonContext ctx = context();
            ctx.aeron().addChannel(channel);
            final ConfigException ex = assertThrows(ConfigException.class, ctx::conclude, channel);
            assertEquals(DaemonConfiguration.AERON_CHANNELS_PROP_NAME, ex.key());
            assertTrue(ex.getMessage().contains("aeron.allowRemote (--aeron-allow-remote)"), ex.getMessage());
            assertTrue(ex.getMessage().endsWith(": " + channel), ex.getMessage());
        }
        final DaemonContext wildcard = context();
        wildcard.aeron().addChannel("aeron:udp?endpoint=0.0.0.0:40123");
        final ConfigException ex = assertThrows(ConfigException.class, wildcard::conclude);
        assertTrue(ex.getMessage().contains("it binds 0.0.0.0, a wildcard"), ex.getMessage());
    }

    @Test
    void shouldAcceptLoopbackIpcAndSpyChannelsAndRemoteOnesWithTheOptIn() {
        final DaemonContext ctx = context();
        ctx.aeron().addChannel("aeron:ipc").addChannel("aeron:udp?endpoint=127.0.0.1:40123")
            .addChannel("aeron:udp?endpoint=[::1]:40124").addChannel("aeron:udp?endpoint=localhost:40125")
            .addChannel("aeron-spy:aeron:udp?endpoint=10.0.0.7:40126");
        ctx.conclude();
        final DaemonContext remote = context();
        remote.aeron().addChannel("aeron:udp?endpoint=0.0.0.0:40123").allowRemote(true).addPod("pod-*");
        remote.conclude();
        assertEquals(java.util.List.of("pod-*"), remote.aeron().pods());
    }

    @Test
    void shouldRefuseAnInvalidChannelAndAnEmptyPodPattern() {
        final DaemonContext bad = context();
        bad.aeron().addChannel("udp://nope");
        assertEquals(DaemonConfiguration.AERON_CHANNELS_PROP_NAME,
            assertThrows(ConfigException.class, bad::conclude).key());
        final DaemonContext emptyPod = context();
        emptyPod.aeron().addPod("");
        assertEquals(DaemonConfiguration.AERON_PODS_PROP_NAME,
            assertThrows(ConfigException.class, emptyPod::conclude).key());
        final DaemonContext emptyTopicPod = context();
        emptyTopicPod.zmq().addTopicPod("");
        assertEquals(DaemonConfiguration.ZMQ_TOPIC_PODS_PROP_NAME,
            assertThrows(ConfigException.class, emptyTopicPod::conclude).key());
    }

    private DaemonContext metrics(final String address, final boolean allowRemote) {
        final DaemonContext c = context();
        c.serving().metrics(address).metricsAllowRemote(allowRemote);
        return c;
    }

    @Test
    void shouldRefuseRemoteMetricsWithoutTheOptIn() {
        for (final String address : new String[] {"0.0.0.0:9464", "[::]:9464", "10.0.0.7:9464", "metrics-host:9464"}) {
            final ConfigException ex = assertThrows(ConfigException.class,
                () -> metrics(address, false).conclude(), address);
            assertEquals(DaemonConfiguration.METRICS_PROP_NAME, ex.key());
            assertTrue(ex.getMessage().contains("metricsAllowRemote (--metrics-allow-remote)"), ex.getMessage());
        }
        metrics("127.0.0.1:9464", false).conclude();
        metrics("[::1]:9464", false).conclude();
        metrics("localhost:0", false).conclude();
        metrics("0.0.0.0:9464", true).conclude();
    }

    @Test
    void shouldClassifyAddressesWithoutDns() {
        assertTrue(NetworkScope.isLoopback("127.0.0.1"));
        assertTrue(NetworkScope.isLoopback("127.1.2.3"));
        assertTrue(NetworkScope.isLoopback("[::1]"));
        assertTrue(NetworkScope.isLoopback("LOCALHOST"));
        assertEquals(false, NetworkScope.isLoopback("0.0.0.0"));
        assertEquals(false, NetworkScope.isLoopback("*"));
        assertEquals(false, NetworkScope.isLoopback("::"));
        assertEquals(false, NetworkScope.isLoopback("192.168.1.10"));
        assertEquals(false, NetworkScope.isLoopback("example.invalid"));
        assertNull(NetworkScope.remoteReason("aeron:ipc?term-length=65536"));
        assertEquals("it binds 10.0.0.7, not a loopback address",
            NetworkScope.remoteReason("aeron:udp?endpoint=10.0.0.7:40123"));
    }
}
