package io.kvidx.serve;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandler;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * TLS on a kvidx HTTP door, optionally mutual: the server's certificate chain and key (PEM), and, for mutual TLS, the
 * CA certificates (PEM) a client's certificate must chain to; a client without one is refused in the handshake, before
 * any request is read. Read once at start; a certificate renewed on disk needs a restart (as the bearer tokens do).
 *
 * <p><b>Note:</b> immutable; thread safe ({@link #handler} from every event loop).
 */
public final class ServerTls {
    private final SslContext context;
    private final boolean mutual;

    private ServerTls(final SslContext context, final boolean mutual) {
        this.context = context;
        this.mutual = mutual;
    }

    /**
     * @param certFile     the server's certificate chain (PEM).
     * @param keyFile      its private key (PEM, PKCS#8).
     * @param clientCaFile the CA certificates (PEM) client certificates must chain to, or null for server TLS only.
     * @param what         the setting's name, for errors (e.g. {@code --http-tls}).
     * @return the door's TLS.
     * @throws IllegalArgumentException naming the file that is missing or unreadable as what it should be.
     */
    public static ServerTls of(final Path certFile, final Path keyFile, final Path clientCaFile, final String what) {
        readable(certFile, what + " certificate");
        readable(keyFile, what + " key");
        if (clientCaFile != null) {
            readable(clientCaFile, what + " client CA");
        }
        try {
            final SslContextBuilder b = SslContextBuilder.forServer(certFile.toFile(), keyFile.toFile());
            if (clientCaFile != null) {
                b.trustManager(clientCaFile.toFile()).clientAuth(ClientAuth.REQUIRE);
            }
            return new ServerTls(b.build(), clientCaFile != null);
        } catch (final javax.net.ssl.SSLException | IllegalArgumentException ex) {
            throw new IllegalArgumentException(what + ": cannot use " + certFile + ", " + keyFile
                + (clientCaFile == null ? "" : ", " + clientCaFile) + " (PEM certificate chain, PKCS#8 key, PEM CA"
                + " certificates): " + ex.getMessage(), ex);
        }
    }

    private static void readable(final Path file, final String what) {
        if (file == null || !Files.isReadable(file)) {
            throw new IllegalArgumentException(what + " file " + file + " is missing or unreadable");
        }
    }

    /**
     * @param alloc the connection's allocator.
     * @return a new connection's TLS handler (first in its pipeline after the connection bound).
     */
    ChannelHandler handler(final ByteBufAllocator alloc) {
        return context.newHandler(alloc);
    }

    /**
     * @return whether clients must present a certificate (mutual TLS).
     */
    public boolean mutual() {
        return mutual;
    }
}
