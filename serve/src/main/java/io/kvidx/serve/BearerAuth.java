package io.kvidx.serve;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.ReferenceCountUtil;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

/**
 * Bearer-token authentication of an HTTP server: every request but those to the open paths (a health path, for
 * probes that carry no secret) must carry {@code Authorization: Bearer <token>}; any other is answered 401 in the
 * API's {@link ErrorShape} (code {@code unauthorized}) and counted ({@link #refused()}). The token is read
 * once from a file (a mounted Secret), trimmed of surrounding whitespace; it is compared in constant time
 * ({@link MessageDigest#isEqual}), so the answer's timing does not tell how much of a guess was right.
 *
 * <p>Sits after the {@link RequestSequencer}, so a refusal is answered in request order. One instance per server,
 * shared by its connections.
 *
 * <p><b>Note:</b> thread safe (immutable but for its counter).
 */
@ChannelHandler.Sharable
public final class BearerAuth extends ChannelInboundHandlerAdapter {
    /** The shortest token accepted (a guessable token is no authentication). */
    public static final int MIN_TOKEN_CHARS = 16;

    private final byte[] expected;
    private final Set<String> openPaths;
    private final byte[] adminExpected;
    private final Set<String> adminPaths;
    private final ErrorShape shape;
    private final LongAdder refused = new LongAdder();

    /**
     * @param token     the token.
     * @param openPaths paths served without a token (exact, without the query).
     * @param shape     the API's error shape.
     * @throws IllegalArgumentException when the token is shorter than {@value #MIN_TOKEN_CHARS} characters or holds
     *                                  whitespace or control characters.
     */
    public BearerAuth(final String token, final Set<String> openPaths, final ErrorShape shape) {
        this(token, openPaths, null, Set.of(), shape);
    }

    /**
     * With a second, administrative token: the admin paths need it, and the first token does not open them.
     *
     * @param token      the token of every other path.
     * @param openPaths  paths served without a token.
     * @param adminToken the token of the admin paths, or null for none (then the first token opens them too).
     * @param adminPaths paths that need the admin token (e.g. {@code /dump}, {@code /metrics}).
     * @param shape      the API's error shape.
     */
    public BearerAuth(final String token, final Set<String> openPaths, final String adminToken,
        final Set<String> adminPaths, final ErrorShape shape) {
        this(authorization(token).getBytes(StandardCharsets.US_ASCII), openPaths, adminToken, adminPaths, shape);
    }

    private BearerAuth(final byte[] expected, final Set<String> openPaths, final String adminToken,
        final Set<String> adminPaths, final ErrorShape shape) {
        this.expected = expected;
        this.openPaths = Set.copyOf(openPaths);
        this.adminExpected = adminToken == null ? null : authorization(adminToken).getBytes(StandardCharsets.US_ASCII);
        this.adminPaths = adminToken == null ? Set.of() : Set.copyOf(adminPaths);
        if (adminExpected != null && expected != null && MessageDigest.isEqual(expected, adminExpected)) {
            throw new IllegalArgumentException("the admin token must differ from the token");
        }
        this.shape = shape;
    }

    /**
     * A token for the admin paths only: every other path is served without one (a proxy whose traffic carries the
     * clients' own {@code Authorization} for the engines behind it, whose metrics still name pods and models).
     *
     * @param adminToken the token of the admin paths.
     * @param adminPaths paths that need it (e.g. {@code /metrics}).
     * @param shape      the API's error shape.
     * @return the authentication.
     */
    public static BearerAuth adminOnly(final String adminToken, final Set<String> adminPaths, final ErrorShape shape) {
        return new BearerAuth((byte[]) null, Set.of(), adminToken, adminPaths, shape);
    }

    /**
     * @param file      a file holding the token (e.g. a mounted Secret's key).
     * @param openPaths paths served without a token.
     * @param shape     the API's error shape.
     * @return the authentication.
     * @throws IllegalArgumentException when the file cannot be read or its token is refused (naming the file).
     */
    public static BearerAuth fromFile(final Path file, final Set<String> openPaths, final ErrorShape shape) {
        return new BearerAuth(readToken(file), openPaths, shape);
    }

    /**
     * @param token a token (surrounding whitespace is trimmed).
     * @return the {@code Authorization} header value that carries it: {@code Bearer <token>}.
     * @throws IllegalArgumentException when the token is shorter than {@value #MIN_TOKEN_CHARS} characters or holds
     *                                  whitespace or control characters.
     */
    public static String authorization(final String token) {
        final String t = token.strip();
        if (t.length() < MIN_TOKEN_CHARS) {
            throw new IllegalArgumentException("the bearer token must have at least " + MIN_TOKEN_CHARS
                + " characters (it has " + t.length() + ")");
        }
        for (int i = 0; i < t.length(); i++) {
            final char c = t.charAt(i);
            if (c <= ' ' || c >= 0x7f) {
                throw new IllegalArgumentException("the bearer token must be printable ASCII without spaces");
            }
        }
        return "Bearer " + t;
    }

    /**
     * @param file a file holding a token (a client's copy of the server's Secret, e.g. a replica fetching a peer's
     *             snapshot).
     * @return the token, checked as {@link #authorization} checks it.
     * @throws IllegalArgumentException when the file cannot be read or its token is refused (naming the file).
     */
    public static String readToken(final Path file) {
        final String token;
        try {
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read the token file " + file + ": " + ex.getMessage(), ex);
        }
        try {
            authorization(token);
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("token file " + file + ": " + ex.getMessage(), ex);
        }
        return token;
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
        if (msg instanceof FullHttpRequest request && !allowed(request)) {
            refused.increment();
            final boolean keepAlive = HttpUtil.isKeepAlive(request);
            ReferenceCountUtil.release(request);
            Responses.error(ctx, keepAlive, shape, new HttpError(401, "unauthorized",
                "this server needs 'Authorization: Bearer <token>'"));
            return;
        }
        ctx.fireChannelRead(msg);
    }

    private boolean allowed(final FullHttpRequest request) {
        final String uri = request.uri();
        final int q = uri.indexOf('?');
        final String path = q < 0 ? uri : uri.substring(0, q);
        if (openPaths.contains(path)) {
            return true;
        }
        final byte[] needed = adminPaths.contains(path) ? adminExpected : expected;
        if (needed == null) {
            return true; // admin-only: this path needs no token
        }
        final String given = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        return given != null && MessageDigest.isEqual(needed, given.getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * @return requests refused for a missing or wrong token.
     */
    public long refused() {
        return refused.sum();
    }
}
