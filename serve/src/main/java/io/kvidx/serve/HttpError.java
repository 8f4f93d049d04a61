package io.kvidx.serve;

/**
 * A request a server refuses: the HTTP status, a stable machine-readable code, and a message for a person. Thrown by
 * handlers and body readers, written by {@link Responses#error} in the API's {@link ErrorShape}. No stack trace is
 * taken (a refusal is not a fault of the server).
 */
public class HttpError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String code;

    /**
     * @param status  HTTP status.
     * @param code    stable code (the API's: Dynamo's indexer codes, or OpenAI's error types).
     * @param message what is wrong, for a person.
     */
    public HttpError(final int status, final String code, final String message) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
    }

    /**
     * @return the HTTP status.
     */
    public final int status() {
        return status;
    }

    /**
     * @return the stable code.
     */
    public final String code() {
        return code;
    }

    /**
     * Adds the headers this refusal's answer carries beside its body (e.g. {@code Allow} on a 405); none by default.
     *
     * @param headers the answer's headers.
     */
    public void addHeaders(final io.netty.handler.codec.http.HttpHeaders headers) {
    }
}
