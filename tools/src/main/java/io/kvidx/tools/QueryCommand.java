package io.kvidx.tools;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RequestExtras;
import io.kvidx.client.keys.ChainedXxh3Hasher;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.cli.MultiModalItems;
import io.kvidx.tokenize.ChatRequest;
import io.kvidx.tokenize.ChatTemplate;
import io.kvidx.tokenize.HfTokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code kvidx query}: maps the index read-only and prints, for the given prompt tokens, each pod holding at least
 * one leading block: {@code <pod-id> <depth> slot=<slot> generation=<generation>}, deepest first, the pod named by
 * the pod table entry of its slot as of the pod table version the query saw (read again if a slot changed hands
 * meanwhile). The prompt is given as token ids ({@code --tokens}) or as text with the model's Hugging Face tokenizer
 * ({@code --text} and {@code --tokenizer}, encoded as vLLM encodes a completion prompt: special tokens added unless
 * {@code --no-add-special-tokens}), or as a chat-completion request ({@code --messages FILE}) rendered with the model's
 * chat template and tokenized without special tokens, as vLLM's chat endpoint does.
 */
@Command(name = "query", mixinStandardHelpOptions = true,
    description = "Print '<pod-id> <depth> slot=<slot> generation=<generation>' for every pod holding leading "
        + "blocks of the prompt, deepest first. The prompt is --tokens, --text tokenized with --tokenizer, or a chat "
        + "(--messages) rendered with the model's chat template and tokenized.")
public final class QueryCommand implements Callable<Integer> {
    /** Times the query is made again when the pod table changed under it, or a shard stayed busy. */
    private static final int ATTEMPTS = 5;

    @Option(names = "--dir", paramLabel = "D", description = "Index directory (default /dev/shm/kvidx).")
    private Path dir;

    @Option(names = "--cell", description = "Cell name (default 'default').")
    private String cell;

    @Option(names = "--model", paramLabel = "M", description = "Model name (part of the chain seed).")
    private String model;

    @Option(names = "--lora-name", paramLabel = "N", description = "LoRA adapter name (part of the chain seed).")
    private String loraName;

    @Option(names = "--cache-salt", description = "Cache salt (part of the chain seed; empty means none, as in vLLM).")
    private String cacheSalt;

    @Option(names = "--mm", paramLabel = "ID:OFFSET:LENGTH",
        description = "A multimodal item of the prompt: its identifier and placeholder tokens [OFFSET, OFFSET+LENGTH)"
            + " (repeatable).")
    private List<String> mm;

    @Option(names = "--block-size", paramLabel = "B", description = "Block size (default: the index's).")
    private Integer blockSize;

    @Option(names = "--tokens", split = ",", paramLabel = "t1,t2,...", description = "Token ids.")
    private int[] tokens;

    @Option(names = "--text", paramLabel = "TEXT",
        description = "The prompt as text (a completion prompt), tokenized with --tokenizer.")
    private String text;

    @Option(names = "--messages", paramLabel = "FILE",
        description = "A chat-completion request body (JSON: \"messages\", optional \"tools\", ...; - for stdin),"
            + " rendered with the model's chat template from --tokenizer's directory, then tokenized without special"
            + " tokens, as vLLM's chat endpoint does.")
    private String messages;

    @Option(names = "--tokenizer", paramLabel = "PATH",
        description = "The model's tokenizer.json, or its directory (for --text; for --messages, the directory"
            + " that also holds tokenizer_config.json or chat_template.jinja).")
    private Path tokenizer;

    @Option(names = "--add-special-tokens", negatable = true, defaultValue = "true", fallbackValue = "true",
        description = "Add the tokenizer's special tokens (e.g. BOS) to --text, as vLLM does for completion prompts"
            + " (default; --no-add-special-tokens for a prompt that already holds them).")
    private boolean addSpecialTokens;

    @Override
    public Integer call() {
        final int[] tokens = promptTokens();
        final RequestExtras extras = MultiModalItems.extras(MultiModalItems.parse(mm));
        final IndexReaderContext ctx = new IndexReaderContext();
        if (dir != null) {
            ctx.dir(dir);
        }
        if (cell != null) {
            ctx.cell(cell);
        }
        try (IndexReader reader = IndexReader.attach(ctx)) {
            final int bs = blockSize != null ? blockSize : reader.blockSize();
            if (bs != reader.blockSize()) {
                System.err.println("kvidx query: warning: block size " + bs + " differs from the index's "
                    + reader.blockSize() + "; no pod can match");
            }
            final long[] keys = new long[Math.min(reader.maxChainLength(), tokens.length / bs)];
            final int n;
            if (reader.keyScheme() == IndexDescriptor.KEY_SCHEME_XXH3_CHAIN) {
                if (extras != null && !extras.isEmpty()) {
                    throw new IllegalArgumentException("the cell is keyed by the xxh3-chain scheme, which has no "
                        + "keys for multimodal items");
                }
                final long seed = ChainedXxh3Hasher.seed(loraName);
                n = new ChainedXxh3Hasher(bs).keys(seed, ChainedXxh3Hasher.firstSeed(seed,
                    MultiModalItems.salt(cacheSalt)), tokens, tokens.length, keys);
            } else {
                n = new RouterKeyHasher(bs).keys(RouterKeyHasher.chainSeed(model, loraName,
                    MultiModalItems.salt(cacheSalt)), tokens, tokens.length, extras, keys);
            }
            final List<String[]> rows = rows(reader, keys, n);
            rows.sort(Comparator.<String[]>comparingInt(r -> -Integer.parseInt(r[1])).thenComparing(r -> r[0]));
            for (final String[] r : rows) {
                System.out.println(String.join(" ", r));
            }
        }
        return 0;
    }

    /**
     * @return the prompt's token ids: {@code --tokens}, or {@code --text} encoded with {@code --tokenizer}.
     * @throws IllegalArgumentException when neither or both are given, or the tokenizer cannot be loaded.
     */
    private int[] promptTokens() {
        final int given = (tokens != null ? 1 : 0) + (text != null ? 1 : 0) + (messages != null ? 1 : 0);
        if (given > 1) {
            throw new IllegalArgumentException("give the prompt as one of --tokens, --text or --messages, not both");
        }
        if (tokens != null) {
            if (tokenizer != null) {
                throw new IllegalArgumentException("--tokenizer is for --text and --messages; --tokens are already"
                    + " token ids");
            }
            return tokens;
        }
        if (given == 0) {
            throw new IllegalArgumentException("give the prompt as --tokens t1,t2,..., as --text TEXT or as"
                + " --messages FILE with --tokenizer PATH");
        }
        if (tokenizer == null) {
            throw new IllegalArgumentException((text != null ? "--text" : "--messages") + " needs --tokenizer PATH"
                + " (the model's tokenizer.json or its directory)");
        }
        TokenizerJar.require(text != null ? "--text" : "--messages");
        if (text != null) {
            try (HfTokenizer t = HfTokenizer.load(tokenizer, addSpecialTokens)) {
                return t.encode(text);
            }
        }
        final ChatRequest chat = ChatRequest.parse(readMessages());
        final String prompt = ChatTemplate.load(tokenizer).render(chat, Map.of());
        try (HfTokenizer t = HfTokenizer.load(tokenizer, false)) {
            return t.encode(prompt, false);
        }
    }

    private String readMessages() {
        try {
            return "-".equals(messages) ? new String(System.in.readAllBytes(), StandardCharsets.UTF_8)
                : Files.readString(Path.of(messages));
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read --messages " + messages + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * Queries, then names each slot from the pod table; the names hold when the pod table version is still the
     * one the query saw (no slot changed hands in between), otherwise it starts again.
     */
    private static List<String[]> rows(final IndexReader reader, final long[] keys, final int n) {
        final PrefixResult result = new PrefixResult();
        for (int attempt = 1; ; attempt++) {
            try {
                reader.query(keys, n, null, result);
                final List<String[]> rows = new ArrayList<>();
                for (int i = 0; i < result.count(); i++) {
                    final int slot = result.slot(i);
                    final IndexReader.PodInfo info = reader.pod(slot);
                    final List<String> row = new ArrayList<>(List.of(info.podId().isEmpty() ? "slot-" + slot
                        : info.podId(), Integer.toString(result.depth(i)), "slot=" + slot,
                        "generation=" + info.generation()));
                    if (info.suspect()) {
                        // Its state may be incomplete: an event gap its engine could not replay.
                        row.add("suspect");
                    }
                    rows.add(row.toArray(String[]::new));
                }
                if (reader.podTableVersion() == result.podTableVersion() || attempt == ATTEMPTS) {
                    return rows;
                }
            } catch (final IndexBusyException ex) {
                if (attempt == ATTEMPTS) {
                    throw ex;
                }
            }
        }
    }
}
