package io.kvidx.tokenize;

import io.kvidx.routing.Preparer;
import io.kvidx.routing.RequestMeta;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TokenIds;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * Turns a request's prompt text ({@link RequestMeta#prompt()}) or chat request ({@link RequestMeta#chat()}) into
 * token ids with its model's Hugging Face tokenizer ({@link HfTokenizer}), so the rest of the Prepare stage (e.g.
 * {@code router-keys}) works as for a request given as token ids. Reads {@link Slots#REQUEST}, writes
 * {@link Slots#TOKENS} (a profile with this preparer takes its tokens from it rather than from the request).
 *
 * <p>A chat request is rendered with the model's chat template ({@link ChatTemplate}, from the same directory as
 * the tokenizer) and the text tokenized without special tokens, as vLLM's chat endpoint does; a prompt is tokenized
 * with the configured {@code add-special-tokens} (vLLM's completion endpoint adds them). A request with neither
 * keeps the token ids the router set, so one profile serves all kinds. The tokenizer is the one given for the
 * request's model, else the one for any model; a request whose model has neither gets no tokens (its prefix is
 * unknown, so cache-aware scorers see no hit and the picker decides on load) and is counted in
 * {@link #noTokenizer()}. A failure (a malformed chat request, a template that raises, a model without a chat
 * template, a tokenizer error) is counted in {@link #failures()} (its message kept in {@link #lastFailure()}) and
 * also leaves no tokens.
 *
 * <p>Tokenizers and templates are loaded when the preparer is built, each distinct file once. Encoding allocates
 * (the native library returns a fresh array; rendering builds the prompt); the token buffer of the context is
 * reused.
 *
 * <p>Each distinct tokenizer may get a {@link PrefixCache} (bounded by {@link Builder#prefixCache(int, long)}; off
 * by default): prompts and rendered chats are then encoded as the ids of their longest cached prefix ending right
 * after a special token plus the encoding of the rest, which gives exactly the ids of encoding the whole text
 * ({@link PrefixBoundaries} says when that holds; a tokenizer where it does not gets no cache, see
 * {@link #prefixCacheDisabledReason(String)}). Models that share a tokenizer file share its cache.
 *
 * <p><b>Note:</b> thread safe; {@link #close()} frees the native tokenizers and must run only after routing stopped.
 */
public final class TokenizePreparer implements Preparer, AutoCloseable {
    private final String name;
    private final Map<String, HfTokenizer> byModel;
    private final HfTokenizer anyModel;
    private final Map<String, ChatTemplate> templateByModel;
    private final ChatTemplate anyModelTemplate;
    private final Map<String, Object> chatTemplateKwargs;
    private final List<HfTokenizer> loaded;
    private final Map<HfTokenizer, PrefixCache> caches;
    private final Map<HfTokenizer, String> cacheDisabled;
    private final LongAdder tokenized = new LongAdder();
    private final LongAdder chats = new LongAdder();
    private final AtomicLong noTokenizer = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private final AtomicReference<String> lastFailure = new AtomicReference<>();

    private TokenizePreparer(final Builder b) {
        this.name = b.name;
        final Map<Path, HfTokenizer> byFile = new HashMap<>();
        final List<HfTokenizer> all = new ArrayList<>();
        try {
            final Map<String, HfTokenizer> models = new HashMap<>();
            for (final Map.Entry<String, Path> e : b.models.entrySet()) {
                models.put(e.getKey(), load(e.getValue(), b.addSpecialTokens, byFile, all));
            }
            this.anyModel = b.anyModel == null ? null : load(b.anyModel, b.addSpecialTokens, byFile, all);
            this.byModel = Map.copyOf(models);
        } catch (final RuntimeException ex) {
            all.forEach(HfTokenizer::close);
            throw ex;
        }
        this.loaded = List.copyOf(all);
        final Map<Path, ChatTemplate> templates = new HashMap<>();
        final Map<String, ChatTemplate> t = new HashMap<>();
        for (final Map.Entry<String, Path> e : b.models.entrySet()) {
            final ChatTemplate ct = template(e.getValue(), templates);
            if (ct != null) {
                t.put(e.getKey(), ct);
            }
        }
        this.templateByModel = Map.copyOf(t);
        this.anyModelTemplate = b.anyModel == null ? null : template(b.anyModel, templates);
        this.chatTemplateKwargs = Map.copyOf(b.chatTemplateKwargs);
        final Map<HfTokenizer, PrefixCache> c = new IdentityHashMap<>();
        final Map<HfTokenizer, String> off = new IdentityHashMap<>();
        if (b.prefixCacheEntries > 0) {
            for (final HfTokenizer tok : loaded) {
                final PrefixBoundaries pb;
                try {
                    pb = PrefixBoundaries.read(tok.file());
                } catch (final RuntimeException ex) {
                    loaded.forEach(HfTokenizer::close);
                    throw new IllegalArgumentException("preparer '" + name + "': " + ex.getMessage(), ex);
                }
                if (pb.enabled()) {
                    c.put(tok, new PrefixCache(tok, pb, b.prefixCacheEntries, b.prefixCacheTokens));
                } else {
                    off.put(tok, pb.disabledReason());
                }
            }
        }
        this.caches = Collections.unmodifiableMap(c);
        this.cacheDisabled = Collections.unmodifiableMap(off);
    }

    private ChatTemplate template(final Path pathOrDir, final Map<Path, ChatTemplate> byDir) {
        final Path dir = (Files.isDirectory(pathOrDir) ? pathOrDir : pathOrDir.toAbsolutePath().getParent())
            .toAbsolutePath().normalize();
        if (byDir.containsKey(dir)) {
            return byDir.get(dir);
        }
        final ChatTemplate t;
        try {
            t = ChatTemplate.loadIfPresent(dir);
        } catch (final RuntimeException ex) {
            loaded.forEach(HfTokenizer::close);
            throw new IllegalArgumentException("preparer '" + name + "': " + ex.getMessage(), ex);
        }
        byDir.put(dir, t);
        return t;
    }

    private static HfTokenizer load(final Path pathOrDir, final boolean addSpecialTokens,
        final Map<Path, HfTokenizer> byFile, final List<HfTokenizer> all) {
        final Path file = Files.isDirectory(pathOrDir) ? pathOrDir.resolve(HfTokenizer.TOKENIZER_FILE) : pathOrDir;
        Path key;
        try {
            key = file.toRealPath();
        } catch (final IOException | UncheckedIOException ex) {
            key = file.toAbsolutePath().normalize();
        }
        HfTokenizer t = byFile.get(key);
        if (t == null) {
            t = HfTokenizer.load(pathOrDir, addSpecialTokens);
            byFile.put(key, t);
            all.add(t);
        }
        return t;
    }

    /**
     * @param name plugin name.
     * @return a builder.
     */
    public static Builder builder(final String name) {
        return new Builder(name);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.REQUEST);
    }

    @Override
    public Set<Slot<?>> writes() {
        return Set.of(Slots.TOKENS);
    }

    @Override
    public void prepare(final RoutingContext ctx) {
        final RequestMeta meta = ctx.get(Slots.REQUEST);
        final String chat = meta.chat();
        final String text = meta.prompt();
        if (chat == null && text == null) {
            return;
        }
        final TokenIds tokens = ctx.get(Slots.TOKENS);
        final HfTokenizer t = tokenizer(meta.model());
        if (t == null) {
            tokens.clear();
            noTokenizer.getAndIncrement();
            return;
        }
        try {
            if (chat != null) {
                final ChatTemplate template = chatTemplate(meta.model());
                if (template == null) {
                    throw new IllegalArgumentException("model " + meta.model() + " has no chat template ("
                        + ChatTemplate.JINJA_FILE + " or chat_template in " + ChatTemplate.CONFIG_FILE + ")");
                }
                encode(t, template.render(ChatRequest.parse(chat), chatTemplateKwargs), false, tokens);
                chats.increment();
            } else {
                encode(t, text, t.addSpecialTokens(), tokens);
            }
            tokenized.increment();
        } catch (final RuntimeException ex) {
            tokens.clear();
            failures.getAndIncrement();
            lastFailure.set(ex.getClass().getSimpleName() + ": " + ex.getMessage());
        }
    }

    private void encode(final HfTokenizer t, final String text, final boolean addSpecialTokens,
        final TokenIds tokens) {
        final PrefixCache cache = caches.get(t);
        if (cache != null) {
            cache.encode(text, addSpecialTokens, tokens);
        } else {
            t.encode(text, addSpecialTokens, tokens);
        }
    }

    /**
     * @param model a model name, or null.
     * @return the prefix cache of the tokenizer that serves it, or null (none configured, or the tokenizer does not
     *         allow one).
     */
    public PrefixCache prefixCache(final String model) {
        final HfTokenizer t = tokenizer(model);
        return t == null ? null : caches.get(t);
    }

    /**
     * @param model a model name, or null.
     * @return why the tokenizer that serves it has no prefix cache although one was configured, or null.
     */
    public String prefixCacheDisabledReason(final String model) {
        final HfTokenizer t = tokenizer(model);
        return t == null ? null : cacheDisabled.get(t);
    }

    /**
     * @param model a model name, or null.
     * @return the chat template of the tokenizer directory that serves it, or null when that directory has none.
     */
    public ChatTemplate chatTemplate(final String model) {
        final HfTokenizer own = model == null ? null : byModel.get(model);
        return own != null ? templateByModel.get(model) : anyModel != null ? anyModelTemplate : null;
    }

    /**
     * @param model a model name, or null.
     * @return the tokenizer for it (its own, else the one for any model), or null.
     */
    public HfTokenizer tokenizer(final String model) {
        final HfTokenizer t = model == null ? null : byModel.get(model);
        return t != null ? t : anyModel;
    }

    /**
     * @return prompts and chats tokenized.
     */
    public long tokenized() {
        return tokenized.sum();
    }

    /**
     * @return chats rendered with a template and tokenized (also counted in {@link #tokenized()}).
     */
    public long chats() {
        return chats.sum();
    }

    /**
     * @return prompts left without tokens because no tokenizer was configured for their model.
     */
    public long noTokenizer() {
        return noTokenizer.get();
    }

    /**
     * @return prompts left without tokens because the tokenizer failed.
     */
    public long failures() {
        return failures.get();
    }

    /**
     * @return the last failure's type and message, or null.
     */
    public String lastFailure() {
        return lastFailure.get();
    }

    /**
     * @return the distinct tokenizers loaded.
     */
    public List<HfTokenizer> loaded() {
        return loaded;
    }

    @Override
    public void close() {
        loaded.forEach(HfTokenizer::close);
    }

    /**
     * Which tokenizer serves which model.
     */
    public static final class Builder {
        /** Prefix cache entries per tokenizer when turned on without a bound. */
        public static final int DEFAULT_PREFIX_CACHE_ENTRIES = 4096;
        /** Prefix cache token ids per tokenizer when turned on without a bound. */
        public static final long DEFAULT_PREFIX_CACHE_TOKENS = 1L << 20;

        private final String name;
        private final Map<String, Path> models = new LinkedHashMap<>();
        private Path anyModel;
        private boolean addSpecialTokens = true;
        private final Map<String, Object> chatTemplateKwargs = new LinkedHashMap<>();
        private int prefixCacheEntries;
        private long prefixCacheTokens = DEFAULT_PREFIX_CACHE_TOKENS;

        private Builder(final String name) {
            this.name = Objects.requireNonNull(name, "name");
        }

        /**
         * @param model     model name as requests give it ({@link RequestMeta#model()}).
         * @param pathOrDir its {@code tokenizer.json}, or the directory holding it (and, for chats,
         *                  {@code tokenizer_config.json} or {@code chat_template.jinja}).
         * @return this.
         */
        public Builder model(final String model, final Path pathOrDir) {
            models.put(Objects.requireNonNull(model, "model"), Objects.requireNonNull(pathOrDir, "pathOrDir"));
            return this;
        }

        /**
         * @param pathOrDir the tokenizer for requests whose model has none of its own (or name no model).
         * @return this.
         */
        public Builder anyModel(final Path pathOrDir) {
            this.anyModel = pathOrDir;
            return this;
        }

        /**
         * @param add whether to add the tokenizer's post-processor tokens (default true, as vLLM does for
         *            completion prompts).
         * @return this.
         */
        public Builder addSpecialTokens(final boolean add) {
            this.addSpecialTokens = add;
            return this;
        }

        /**
         * @param kwargs chat-template variables under each request's own {@code chat_template_kwargs} (vLLM's
         *               {@code --default-chat-template-kwargs}), e.g. {@code enable_thinking: false}.
         * @return this.
         */
        public Builder chatTemplateKwargs(final Map<String, ?> kwargs) {
            chatTemplateKwargs.putAll(kwargs);
            return this;
        }

        /**
         * Gives each tokenizer a {@link PrefixCache} (off by default).
         *
         * @param entries entries kept at most per tokenizer ({@value #DEFAULT_PREFIX_CACHE_ENTRIES} is the
         *                documented choice); 0 turns the cache off.
         * @param tokens  token ids kept at most per tokenizer ({@value #DEFAULT_PREFIX_CACHE_TOKENS} is the
         *                documented choice: about 8 to 12 MiB with the cached text).
         * @return this.
         * @throws IllegalArgumentException when a bound is negative, or tokens is 0 while entries is not.
         */
        public Builder prefixCache(final int entries, final long tokens) {
            if (entries < 0 || tokens < 0 || (entries > 0 && tokens == 0)) {
                throw new IllegalArgumentException("preparer '" + name + "': prefix cache bounds must be >= 0"
                    + " (entries 0 turns it off; tokens must then be > 0): entries " + entries + ", tokens "
                    + tokens);
            }
            this.prefixCacheEntries = entries;
            this.prefixCacheTokens = tokens;
            return this;
        }

        /**
         * Loads the tokenizers and, from the same directories, the chat templates.
         *
         * @return the preparer.
         * @throws IllegalArgumentException when no tokenizer is given or one cannot be loaded.
         */
        public TokenizePreparer build() {
            if (models.isEmpty() && anyModel == null) {
                throw new IllegalArgumentException("preparer '" + name + "' has no tokenizer: give one per model"
                    + " or one for any model");
            }
            return new TokenizePreparer(this);
        }
    }
}
