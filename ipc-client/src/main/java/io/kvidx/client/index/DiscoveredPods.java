package io.kvidx.client.index;

import io.kvidx.client.json.MiniJson;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Where the pods the daemon discovered are reached, and where they run: the cell's {@value #FILE_NAME}, which the
 * daemon's pod discovery writes and routers and pickers beside it read, so that a pod found on the Kubernetes API
 * server is routed to at its own address ({@code http://<podIP>:<targetPort>}) and scored by its node and zone
 * without a second watch of the API server.
 *
 * <pre>
 * {"version": 1,
 *  "pods": [{"id": "vllm-0", "url": "http://10.0.0.7:8000", "model": "Qwen/Qwen3-0.6B",
 *            "node": "gpu-node-3", "zone": "us-east1-b"}, ...]}
 * </pre>
 *
 * <p>One entry per pod (its base id: a data-parallel rank {@code <pod>#<r>} is reached at its pod's URL);
 * {@code model}, {@code node} and {@code zone} may be null. Written whole to a temporary file and renamed into place,
 * so a reader sees the old list or the new; removed when discovery stops (a reader then keeps no discovered pod).
 *
 * <p><b>Note:</b> written only by the daemon's discovery feed; read by any process (cold path: allocates).
 */
public final class DiscoveredPods {
    /** The file's name in the cell directory. */
    public static final String FILE_NAME = "pods.json";
    /** The format's version; a reader refuses another. */
    public static final int VERSION = 1;
    /** The largest file a reader accepts (a full pod table's entries fit many times over). */
    public static final int MAX_FILE_CHARS = 4 << 20;

    private static final MiniJson.Limits LIMITS = new MiniJson.Limits(MAX_FILE_CHARS, 4, 1 << 16, 4096, 32);

    private DiscoveredPods() {
    }

    /**
     * One discovered pod.
     *
     * @param id    its pod id (an instance id, {@link PodIds}: no rank suffix).
     * @param url   its engine's HTTP server, {@code http://host:port} (an absolute http or https URI with a host).
     * @param model the model it serves, or null.
     * @param node  the node it runs on, or null.
     * @param zone  its zone, or null.
     */
    public record Pod(String id, String url, String model, String node, String zone) {
        /**
         * Validates.
         */
        public Pod {
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(url, "url");
            final String why = PodIds.checkInstanceId(id);
            if (why != null) {
                throw new IllegalArgumentException(why);
            }
            checkUrl(url);
        }

        /**
         * @return {@link #url()} as a URI.
         */
        public URI uri() {
            return URI.create(url);
        }
    }

    /**
     * Writes the directory whole (temporary file, then an atomic rename).
     *
     * @param cellDir the cell directory.
     * @param pods    the pods, one per id.
     * @throws IOException when the file cannot be written.
     */
    public static void write(final Path cellDir, final Collection<Pod> pods) throws IOException {
        final List<Object> list = new ArrayList<>(pods.size());
        for (final Pod p : pods) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", p.id());
            m.put("url", p.url());
            m.put("model", p.model());
            m.put("node", p.node());
            m.put("zone", p.zone());
            list.add(m);
        }
        final Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("version", (long) VERSION);
        doc.put("pods", list);
        CellFileWrite.replace(cellDir.resolve(FILE_NAME), MiniJson.write(doc) + "\n");
    }

    /**
     * @param cellDir the cell directory.
     * @throws IOException when the file exists and cannot be removed.
     */
    public static void remove(final Path cellDir) throws IOException {
        Files.deleteIfExists(cellDir.resolve(FILE_NAME));
    }

    /**
     * Parses a directory's text.
     *
     * @param text the file's text.
     * @return pod id to pod, in the file's order.
     * @throws IllegalArgumentException when the text is not a directory of this version, or an entry is invalid
     *                                  (naming it).
     */
    public static Map<String, Pod> parse(final String text) {
        final Object doc = MiniJson.parse(text, LIMITS);
        if (!(doc instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException("expected a JSON object");
        }
        if (!(m.get("version") instanceof Long v) || v != VERSION) {
            throw new IllegalArgumentException("version " + m.get("version") + " is not " + VERSION);
        }
        if (!(m.get("pods") instanceof List<?> pods)) {
            throw new IllegalArgumentException("'pods' must be an array");
        }
        final Map<String, Pod> out = new LinkedHashMap<>();
        for (int i = 0; i < pods.size(); i++) {
            if (!(pods.get(i) instanceof Map<?, ?> e)) {
                throw new IllegalArgumentException("pods[" + i + "] must be an object");
            }
            final Pod p;
            try {
                p = new Pod(string(e, "id", true), string(e, "url", true), string(e, "model", false),
                    string(e, "node", false), string(e, "zone", false));
            } catch (final IllegalArgumentException | NullPointerException ex) {
                throw new IllegalArgumentException("pods[" + i + "]: " + ex.getMessage(), ex);
            }
            if (out.put(p.id(), p) != null) {
                throw new IllegalArgumentException("pods[" + i + "]: pod " + p.id() + " is listed twice");
            }
        }
        return out;
    }

    private static String string(final Map<?, ?> e, final String key, final boolean required) {
        final Object v = e.get(key);
        if (v == null) {
            if (required) {
                throw new IllegalArgumentException("'" + key + "' is missing");
            }
            return null;
        }
        if (!(v instanceof String s)) {
            throw new IllegalArgumentException("'" + key + "' must be a string");
        }
        return s;
    }

    private static void checkUrl(final String url) {
        final URI u;
        try {
            u = new URI(url);
        } catch (final URISyntaxException ex) {
            throw new IllegalArgumentException("url '" + url + "': " + ex.getMessage(), ex);
        }
        if (!("http".equals(u.getScheme()) || "https".equals(u.getScheme())) || u.getHost() == null) {
            throw new IllegalArgumentException("url '" + url + "' must be http:// or https:// with a host");
        }
    }
}
