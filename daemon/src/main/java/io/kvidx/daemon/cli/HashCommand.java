package io.kvidx.daemon.cli;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.keys.vllm.MultiModalFeature;
import io.kvidx.client.keys.vllm.VllmBlockHasher;
import io.kvidx.client.keys.vllm.VllmExtraKeys;
import io.kvidx.client.keys.vllm.VllmHashAlgorithm;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code kvidx hash}: block keys of a token sequence, one line per full block, with kvidx's router keys or any of
 * vLLM's four prefix-cache hashes (see docs/keys.md).
 */
@Command(name = "hash", mixinStandardHelpOptions = true,
    description = {
        "Print the key of every full block of a token sequence, one unsigned decimal per line.",
        "router: kvidx's chained XXH3-64 (seeded by --model, --lora-name, --cache-salt; blocks overlapping --mm"
            + " items keyed with them).",
        "sha256, sha256_cbor, xxhash, xxhash_cbor: vLLM's block hashes (seeded by --seed = PYTHONHASHSEED);"
            + " the value is vLLM's KV-event value (last 8 bytes of the digest, big-endian).",
    })
public final class HashCommand implements Callable<Integer> {
    static final String ROUTER = "router";

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Option(names = "--algo", defaultValue = ROUTER, paramLabel = "ALGO",
        description = "router, sha256, sha256_cbor, xxhash or xxhash_cbor (default ${DEFAULT-VALUE}).")
    private String algo;

    @Option(names = "--block-size", defaultValue = "16", paramLabel = "B",
        description = "Tokens per block (default ${DEFAULT-VALUE}).")
    private int blockSize;

    @Option(names = "--seed", paramLabel = "S",
        description = "vLLM algorithms: the engine's PYTHONHASHSEED string (NONE_HASH = H(seed)). Required for them.")
    private String seed;

    @Option(names = "--model", paramLabel = "M", description = "router: model name folded into the chain seed.")
    private String model;

    @Option(names = "--lora-name", paramLabel = "N", description = "LoRA adapter name (both families).")
    private String loraName;

    @Option(names = "--cache-salt", paramLabel = "S", description = "Cache salt (both families).")
    private String cacheSalt;

    @Option(names = "--mm", paramLabel = "ID:OFFSET:LENGTH",
        description = "A multimodal item of the prompt: its identifier and placeholder tokens [OFFSET, OFFSET+LENGTH)"
            + " (both families; repeatable).")
    private List<String> mm;

    @Option(names = "--tokens", paramLabel = "t1,t2,...", description = "Token ids, comma or space separated.")
    private String tokens;

    @Option(names = "--tokens-file", paramLabel = "F",
        description = "File of token ids, comma or whitespace separated.")
    private Path tokensFile;

    @Option(names = "--digest", description = "vLLM algorithms: print each block's full digest in hex instead.")
    private boolean digest;

    @Override
    public Integer call() {
        if (blockSize < 1) {
            throw new IllegalArgumentException("--block-size must be at least 1: " + blockSize);
        }
        final int[] ids = parseTokens(tokenText());
        final List<MultiModalFeature> items = MultiModalItems.parse(mm);
        final PrintWriter out = spec.commandLine().getOut();
        if (ROUTER.equals(algo)) {
            if (seed != null) {
                throw new IllegalArgumentException(
                    "--seed is for the vLLM algorithms; router keys are seeded by --model, --lora-name, --cache-salt");
            }
            if (digest) {
                throw new IllegalArgumentException("--digest is for the vLLM algorithms (a router key is the digest)");
            }
            final RouterKeyHasher hasher = new RouterKeyHasher(blockSize);
            final long[] keys = new long[ids.length / blockSize];
            final int n = hasher.keys(RouterKeyHasher.chainSeed(model, loraName, MultiModalItems.salt(cacheSalt)),
                ids, ids.length, MultiModalItems.extras(items), keys);
            for (int i = 0; i < n; i++) {
                out.println(Long.toUnsignedString(keys[i]));
            }
        } else {
            final VllmHashAlgorithm algorithm;
            try {
                algorithm = VllmHashAlgorithm.fromName(algo);
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException("unknown --algo " + algo
                    + " (router, sha256, sha256_cbor, xxhash, xxhash_cbor)", ex);
            }
            if (seed == null) {
                throw new IllegalArgumentException("--seed (the engine's PYTHONHASHSEED) is required for " + algo);
            }
            if (model != null) {
                throw new IllegalArgumentException(
                    "--model is not part of vLLM's block hash; leave it out for " + algo);
            }
            final VllmBlockHasher hasher = new VllmBlockHasher(algorithm, blockSize);
            final int d = hasher.digestLength();
            final int blocks = ids.length / blockSize;
            final byte[] digests = new byte[blocks * d];
            final long[] values = new long[blocks];
            final int n = hasher.hashRequest(hasher.noneHash(seed), ids, ids.length,
                new VllmExtraKeys(loraName, cacheSalt, items, VllmExtraKeys.MultiModalKeyStyle.IDENTIFIER_AND_OFFSET),
                digests, values);
            final HexFormat hex = HexFormat.of();
            for (int i = 0; i < n; i++) {
                out.println(digest ? hex.formatHex(digests, i * d, (i + 1) * d) : Long.toUnsignedString(values[i]));
            }
        }
        out.flush();
        return 0;
    }

    private String tokenText() {
        if ((tokens == null) == (tokensFile == null)) {
            throw new IllegalArgumentException("give exactly one of --tokens and --tokens-file");
        }
        if (tokens != null) {
            return tokens;
        }
        try {
            return Files.readString(tokensFile, StandardCharsets.UTF_8);
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read --tokens-file " + tokensFile + ": " + ex, ex);
        }
    }

    /**
     * Parses token ids separated by commas and/or whitespace.
     *
     * @param text the ids.
     * @return the ids.
     * @throws IllegalArgumentException on a non-numeric, negative or out-of-range id.
     */
    static int[] parseTokens(final String text) {
        final String trimmed = text.strip();
        if (trimmed.isEmpty()) {
            return new int[0];
        }
        final String[] parts = trimmed.split("[,\\s]+");
        final int[] ids = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            final String p = parts[i];
            if (p.isEmpty() || !p.chars().allMatch(c -> c >= '0' && c <= '9')) {
                throw new IllegalArgumentException("token " + (i + 1) + " is not a non-negative integer: '"
                    + abbreviate(p) + "'");
            }
            try {
                ids[i] = Integer.parseInt(p);
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("token " + (i + 1) + " is out of range (max "
                    + Integer.MAX_VALUE + "): " + abbreviate(p), ex);
            }
        }
        return ids;
    }

    private static String abbreviate(final String s) {
        return s.length() > 24 ? s.substring(0, 24) + "..." : s;
    }
}
