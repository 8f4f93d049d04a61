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
    /**
     * A field has the wrong type or an out-of-range value (422, as Dynamo answers a body that does not deserialize), or
     * a well-typed value the API refuses (400: an endpoint that is not ZeroMQ's, an instance id outside the pod id
     * rule).
     */
    public static final String INVALID_FIELD = "invalid_field";
    /** A POST without {@code Content-Type: application/json} (415, as Dynamo answers). */
    public static final String UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type";
    /** The same instance and rank registered again with the same endpoint (409, as Dynamo answers). */
    public static final String ALREADY_REGISTERED = "already_registered";
    /** {@code /query_by_hash} with hashes of a key scheme the cell was not started with. */
    public static final String WRONG_KEY_SCHEME = "wrong_key_scheme";
    /** An endpoint of Dynamo's API that kvidx refuses on purpose (501; docs/service-api-peers.md says why). */
    public static final String NOT_IMPLEMENTED = "not_implemented";
    /** No pod of the cell serves the model (in the routing group). */
    public static final String UNKNOWN_MODEL = "unknown_model";
    /** The engine's block size is not the cell's router block size (409, as Dynamo answers a mismatch). */
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

    /** A field that does not deserialize into the request: the wrong type or out of its type's range (422). */
    static ApiException invalid(final String field, final String what) {
        return new ApiException(422, INVALID_FIELD, "field '" + field + "' " + what);
    }

    /** A well-typed field whose value the API refuses (400). */
    static ApiException refused(final String field, final String what) {
        return new ApiException(400, INVALID_FIELD, "field '" + field + "' " + what);
    }
}
