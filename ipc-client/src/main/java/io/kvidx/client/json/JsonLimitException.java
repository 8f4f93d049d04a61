package io.kvidx.client.json;

/**
 * A JSON document refused by {@link MiniJson} because it exceeds one of its {@link MiniJson.Limits}: which limit,
 * its value, and the offset (in chars) of the offending part: the first char past the document limit, the
 * {@code [} or <code>{</code> one level too deep, the start of the string or number too long, the comma before the
 * element one too many. A subclass of {@link IllegalArgumentException}, so
 * callers that treat any unreadable document alike need not change; callers that answer a client tell it apart
 * (a request too large or too deep, not a malformed one).
 */
public final class JsonLimitException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** The limit a document exceeded. */
    public enum Limit {
        /** {@link MiniJson.Limits#maxInputChars()}: the whole document. */
        INPUT_CHARS("document length", "chars"),
        /** {@link MiniJson.Limits#maxDepth()}: arrays and objects open at once. */
        DEPTH("nesting depth", "levels"),
        /** {@link MiniJson.Limits#maxNumberChars()}: one number literal. */
        NUMBER_CHARS("number length", "chars"),
        /** {@link MiniJson.Limits#maxStringChars()}: one string (a member name or a value), decoded. */
        STRING_CHARS("string length", "chars"),
        /** {@link MiniJson.Limits#maxElements()}: the elements of one array or the members of one object. */
        ELEMENTS("element count", "elements");

        private final String what;
        private final String unit;

        Limit(final String what, final String unit) {
            this.what = what;
            this.unit = unit;
        }
    }

    private final Limit limit;
    private final int max;
    private final int offset;

    /**
     * @param limit  the limit exceeded.
     * @param max    its value.
     * @param offset where the offending part begins, in chars from the start of the document.
     */
    public JsonLimitException(final Limit limit, final int max, final int offset) {
        super("invalid JSON at offset " + offset + ": " + limit.what + " exceeds " + max + " " + limit.unit);
        this.limit = limit;
        this.max = max;
        this.offset = offset;
    }

    /**
     * @return the limit exceeded.
     */
    public Limit limit() {
        return limit;
    }

    /**
     * @return the limit's value.
     */
    public int max() {
        return max;
    }

    /**
     * @return where the offending part begins, in chars from the start of the document.
     */
    public int offset() {
        return offset;
    }
}
