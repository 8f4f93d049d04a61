package io.kvidx.router;

import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command-line options every front of the decision layer takes ({@code kvidx router}, {@code kvidx epp}; a
 * picocli mixin): the index it reads, the pods listed by hand and the URL template, the routing policy and the
 * tokenizer. Options given override the YAML file's; unset ones leave it.
 */
public final class DecisionOptions {
    /** What the options are applied to: a front's configuration. */
    public interface Target {
        /**
         * @param spec a pod, {@code ID=URL}.
         * @return this.
         */
        Target podSpec(String spec);

        /**
         * @param template URL of pods the index knows and the list does not name ({@code {pod}}).
         * @return this.
         */
        Target urlTemplate(String template);

        /**
         * @param hosts hosts the template's URLs may reach, added to the YAML's.
         * @return this.
         */
        Target urlHosts(List<String> hosts);

        /**
         * @param dir the index directory.
         * @return this.
         */
        Target indexDir(String dir);

        /**
         * @param cell the index cell.
         * @return this.
         */
        Target indexCell(String cell);

        /**
         * @param policy the routing policy, when the YAML has no profiles.
         * @return this.
         */
        Target policy(String policy);

        /**
         * @param tokenizer tokenizer.json or its directory.
         * @return this.
         */
        Target tokenizer(Path tokenizer);
    }

    @Option(names = "--pod", description = "ID=URL of a pod's OpenAI server (repeatable); ID as the index knows it.")
    private List<String> pods = new ArrayList<>();

    @Option(names = "--pod-url-template", description = "URL for pods the index knows that neither --pod nor pod "
        + "discovery names, e.g. http://{pod}:8000.")
    private String urlTemplate;

    @Option(names = "--pod-url-host", paramLabel = "CIDR|GLOB", description = "A host --pod-url-template's URLs "
        + "may reach (repeatable; YAML pod-url-hosts): a CIDR block or a host-name glob. Default: the private and "
        + "loopback blocks, and names of the template's own domain (docs/router.md, \"Pod URLs\").")
    private List<String> urlHosts = new ArrayList<>();

    @Option(names = "--dir", description = "Index directory (default " + RouterConfig.DIR_DEFAULT + ").")
    private String dir;

    @Option(names = "--cell", description = "Index cell (default " + RouterConfig.CELL_DEFAULT + ").")
    private String cell;

    @Option(names = "--policy", description = "Routing when the YAML has no profiles: cache-aware (default),"
        + " approximate, round-robin, least-load.")
    private String policy;

    @Option(names = "--tokenizer", description = "tokenizer.json (or its directory, with tokenizer_config.json for"
        + " chats) for text and chat requests.")
    private Path tokenizer;

    /**
     * Applies the options given.
     *
     * @param target the configuration.
     * @throws IllegalArgumentException for a malformed {@code --pod}, or {@code --policy} beside YAML profiles.
     */
    public void applyTo(final Target target) {
        for (final String p : pods) {
            target.podSpec(p);
        }
        if (urlTemplate != null) {
            target.urlTemplate(urlTemplate);
        }
        if (!urlHosts.isEmpty()) {
            target.urlHosts(urlHosts);
        }
        if (dir != null) {
            target.indexDir(dir);
        }
        if (cell != null) {
            target.indexCell(cell);
        }
        if (policy != null) {
            target.policy(policy);
        }
        if (tokenizer != null) {
            target.tokenizer(tokenizer);
        }
    }
}
