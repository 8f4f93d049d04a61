package io.kvidx.daemon.membership;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The engines registered through the API, kept in the cell's state directory ({@code state/engines.json}) so that
 * a restarted daemon subscribes to them again. Written whole to a temporary file, forced to disk and renamed over
 * the old one, so a crash leaves either the old list or the new. The format is a JSON array of objects with the
 * registration's fields ({@code instance_id, dp_rank, endpoint, replay_endpoint, model_name, block_size,
 * routing_group, additional_salt, type}).
 *
 * <p><b>Note:</b> written by the membership table's thread only.
 */
public final class EngineFile {
    /** File name inside the state directory. */
    public static final String FILE_NAME = "engines.json";

    private static final JsonFactory JSON = new JsonFactory();

    private final Path file;

    /**
     * @param stateDir the cell's state directory.
     */
    public EngineFile(final Path stateDir) {
        this.file = stateDir.resolve(FILE_NAME);
    }

    /**
     * @return the kept engines; none when the file does not exist.
     * @throws IllegalStateException when the file exists and cannot be read (naming it and the fault).
     */
    public List<Engine> read() {
        if (!Files.exists(file)) {
            return List.of();
        }
        try {
            return decode(Files.readAllBytes(file));
        } catch (final IOException | RuntimeException ex) {
            throw new IllegalStateException("cannot read the registered engines from " + file + ": " + ex.getMessage()
                + " (fix or remove the file; it is rewritten at the next registration)", ex);
        }
    }

    /**
     * @param json a JSON array of engines, as {@link #encode} writes it (a snapshot's membership section).
     * @return the engines (registered through the API).
     * @throws IOException when the JSON is not such an array.
     * @throws IllegalArgumentException when an engine's fields are invalid.
     */
    public static List<Engine> decode(final byte[] json) throws IOException {
        final List<Engine> engines = new ArrayList<>();
        if (json.length == 0) {
            return engines;
        }
        try (JsonParser p = JSON.createParser(json)) {
            if (p.nextToken() != JsonToken.START_ARRAY) {
                throw new IOException("expected a JSON array");
            }
            while (p.nextToken() == JsonToken.START_OBJECT) {
                String instance = null;
                String endpoint = null;
                String replay = null;
                String model = null;
                String group = null;
                String salt = null;
                String type = "vllm";
                int rank = 0;
                int blockSize = 0;
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    final String name = p.currentName();
                    p.nextToken();
                    switch (name) {
                        case "instance_id" -> instance = p.getValueAsString();
                        case "dp_rank" -> rank = p.getIntValue();
                        case "endpoint" -> endpoint = p.getValueAsString();
                        case "replay_endpoint" -> replay = p.getValueAsString();
                        case "model_name" -> model = p.getValueAsString();
                        case "block_size" -> blockSize = p.getIntValue();
                        case "routing_group" -> group = p.getValueAsString();
                        case "additional_salt" -> salt = p.getValueAsString();
                        case "type" -> type = p.getValueAsString();
                        default -> p.skipChildren();
                    }
                }
                engines.add(new Engine(instance, rank, endpoint, replay, model, blockSize, group, salt,
                    ZmqEndpoint.Engine.parse(type), Engine.Source.API));
            }
        }
        return engines;
    }

    /**
     * @param engines engines registered through the API.
     * @return them as the JSON array this file holds.
     */
    public static byte[] encode(final List<Engine> engines) {
        final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try {
            writeTo(out, engines);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return out.toByteArray();
    }

    /**
     * Adds engines a peer's snapshot named (a replica catching up) to the kept list, unless one of the same key is
     * already kept.
     *
     * @param engines the peer's registered engines.
     */
    public void merge(final List<Engine> engines) {
        final java.util.Map<String, Engine> byKey = new java.util.LinkedHashMap<>();
        for (final Engine e : read()) {
            byKey.put(e.key(), e);
        }
        for (final Engine e : engines) {
            byKey.putIfAbsent(e.key(), e);
        }
        write(new ArrayList<>(byKey.values()));
    }

    /**
     * Replaces the kept list.
     *
     * @param engines the engines registered through the API.
     * @throws UncheckedIOException when the file cannot be written.
     */
    public void write(final List<Engine> engines) {
        final Path tmp = file.resolveSibling(FILE_NAME + ".tmp");
        try {
            Files.createDirectories(file.getParent());
            try (OutputStream out = Files.newOutputStream(tmp)) {
                writeTo(out, engines);
            }
            try (var channel = java.nio.channels.FileChannel.open(tmp, java.nio.file.StandardOpenOption.WRITE)) {
                channel.force(true);
            }
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (final AtomicMoveNotSupportedException ex) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot keep the registered engines in " + file + ": " + ex.getMessage(),
                ex);
        }
    }

    private static void writeTo(final OutputStream out, final List<Engine> engines) throws IOException {
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartArray();
            for (final Engine e : engines) {
                g.writeStartObject();
                g.writeStringField("instance_id", e.instanceId());
                g.writeNumberField("dp_rank", e.dpRank());
                g.writeStringField("endpoint", e.endpoint());
                if (e.replayEndpoint() != null) {
                    g.writeStringField("replay_endpoint", e.replayEndpoint());
                }
                g.writeStringField("model_name", e.model());
                g.writeNumberField("block_size", e.blockSize());
                g.writeStringField("routing_group", e.routingGroup());
                if (e.additionalSalt() != null) {
                    g.writeStringField("additional_salt", e.additionalSalt());
                }
                g.writeStringField("type", e.type().configName());
                g.writeEndObject();
            }
            g.writeEndArray();
        }
    }
}
