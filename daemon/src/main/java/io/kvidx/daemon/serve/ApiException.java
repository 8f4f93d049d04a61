package io.kvidx.daemon.serve;

import io.kvidx.serve.HttpError;

/**
 * A request the API refuses, with its HTTP status and a stable machine-readable code. The body sent is
 * {@code {"error": message, "code": code}} (the serving layer's {@link io.kvidx.serve.ErrorShape#FLAT}): {@code error}
 * is the field Dynamo's indexer and Mooncake's API answer with, {@code code} never changes between versions
 * (docs/service-api.md lists them).
 */
public final class ApiException extends HttpError {
    private static final long serialVersionUID = 1L;

    /** The body is not JSON, or not the JSON object the endpoint takes. */
    public static final String BAD_JSON = "bad_json";
    /** A required field is missing (422, as Dynamo answers a query without {@code token_ids}). */
    public static final String MISSING_FIELD = "missing_field";
    /** A field has the wrong type or an out-of-range value. */
    public static final String INVALID_FIELD = "invalid_field";
    /** No pod of the cell serves the model (in the routing group). */
    public static final String UNKNOWN_MODEL = "unknown_model";
    /** The engine's block size is not the cell's router block size. */
    public static final String WRONG_BLOCK_SIZE = "wrong_block_size";
    /** The body exceeds the configured size. */
    public static final String BODY_TOO_LARGE = "body_too_large";
    /** More tokens or hashes than a query takes. */
    public static final String TOO_MANY_TOKENS = "too_many_tokens";
    /** No such endpoint. */
    public static final String NOT_FOUND = "not_found";
    /** The endpoint exists but not for this method. */
    public static final String METHOD_NOT_ALLOWED = "method_not_allowed";
    /** No such registered instance. */
    public static final String UNKNOWN_INSTANCE = "unknown_instance";
    /** The instance is registered with another endpoint (unregister it first). */
    public static final String CONFLICT = "conflict";
    /** An endpoint names a host outside {@code httpRegisterHosts}. */
    public static final String ENDPOINT_NOT_ALLOWED = "endpoint_not_allowed";
    /** The daemon holds the most API registrations allowed ({@code httpMaxRegistrations}). */
    public static final String TOO_MANY_ENGINES = "too_many_engines";
    /** The index cannot answer now (its writer is stale or a shard stayed busy); retry or fall back. */
    public static final String UNAVAILABLE = "unavailable";
    /** The daemon failed to do what the request asked (logged). */
    public static final String INTERNAL = "internal";

    /**
     * @param status  HTTP status.
     * @param code    stable code (one of this class's constants).
     * @param message what is wrong, for a person.
     */
    public ApiException(final int status, final String code, final String message) {
        super(status, code, message);
    }

    static ApiException badJson(final String message) {
        return new ApiException(400, BAD_JSON, message);
    }

    static ApiException missing(final String field) {
        return new ApiException(422, MISSING_FIELD, "missing field '" + field + "'");
    }

    static ApiException invalid(final String field, final String what) {
        return new ApiException(400, INVALID_FIELD, "field '" + field + "' " + what);
    }
}
