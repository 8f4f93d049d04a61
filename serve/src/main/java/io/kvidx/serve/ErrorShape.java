package io.kvidx.serve;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;

/**
 * How an API writes an {@link HttpError}: each kvidx server speaks the contract of the peers its clients already use,
 * so the shape is the API's, the error and its writer are one.
 */
public enum ErrorShape {
    /**
     * Dynamo's standalone indexer and Mooncake's indexer API (the daemon's API):
     * {@code {"error": "<message>", "code": "<code>"}}.
     */
    FLAT {
        @Override
        public void write(final JsonGenerator g, final HttpError error) throws IOException {
            g.writeStartObject();
            g.writeStringField("error", error.getMessage());
            g.writeStringField("code", error.code());
            g.writeEndObject();
        }
    },
    /**
     * OpenAI's (kvidx router): {@code {"error": {"message": "<message>", "type": "<code>", "code": <status>}}}.
     */
    OPENAI {
        @Override
        public void write(final JsonGenerator g, final HttpError error) throws IOException {
            g.writeStartObject();
            g.writeObjectFieldStart("error");
            g.writeStringField("message", error.getMessage());
            g.writeStringField("type", error.code());
            g.writeNumberField("code", error.status());
            g.writeEndObject();
            g.writeEndObject();
        }
    };

    /**
     * @param g     the generator.
     * @param error the error.
     * @throws IOException when writing fails.
     */
    public abstract void write(JsonGenerator g, HttpError error) throws IOException;
}
