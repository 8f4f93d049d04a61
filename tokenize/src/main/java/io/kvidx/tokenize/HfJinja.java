package io.kvidx.tokenize;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.objects.date.StrftimeFormatter;
import jinjava.de.odysseus.el.ExpressionFactoryImpl;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ExpressionFactory;

import java.time.ZonedDateTime;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Jinja environment of Hugging Face's chat templates, on jinjava. transformers renders templates with Jinja2's
 * {@code ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])}, its own
 * {@code tojson} filter and the globals {@code raise_exception} and {@code strftime_now}; this class sets jinjava up
 * the same way:
 * <ul>
 *   <li>{@code trim_blocks}, {@code lstrip_blocks} ({@link #lstripBlocks(String)}); the template source's newlines normalized and its one trailing
 *       newline dropped as Jinja2's lexer does ({@link #source(String)}; jinjava's own option strips the
 *       rendered output's last newline instead, so it is off); jinjava's Python-like
 *       legacy overrides ({@link #overrides()}), and no nested interpretation (a message holding
 *       {@code {{ x }}} stays text);</li>
 *   <li>Python's {@code str} methods on strings ({@link PyStringResolver}) and extended slices
 *       ({@link PyExpressions});</li>
 *   <li>filters {@code tojson} (Python's {@code json.dumps}, {@link PyJson}) and {@code trim} (Python's
 *       {@code str.strip}); functions {@code raise_exception(message)} (fails the render with the message) and
 *       {@code strftime_now(format)}. {@code namespace(...)}, {@code loop.*}, {@code break} and {@code continue} are
 *       jinjava's own.</li>
 * </ul>
 *
 * <p><b>Note:</b> the returned {@link Jinjava} is configured once and then only read; jinjava renders each call with
 * its own interpreter, so one instance serves concurrent renders.
 */
final class HfJinja {
    /** Output bound of one render, characters: far above any prompt, stops a runaway template. */
    static final long MAX_OUTPUT_CHARS = 64L << 20;
    /** The prefix of a {@code raise_exception} error, so the caller can tell it from engine errors. */
    static final String RAISED = "raise_exception: ";

    private HfJinja() {
    }

    static Jinjava create() {
        final CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PyStringResolver());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        final JinjavaConfig config = JinjavaConfig.newBuilder()
            .withTrimBlocks(true)
            .withLstripBlocks(false)
            .withKeepTrailingNewline(true)
            .withNestedInterpretationEnabled(false)
            .withFailOnUnknownTokens(false)
            .withMaxOutputSize(MAX_OUTPUT_CHARS)
            .withLegacyOverrides(overrides())
            .withElResolver(resolver)
            .build();
        final Jinjava jinjava = new PyJinjava(config);
        jinjava.registerFilter(new ToJson());
        jinjava.registerFilter(new Trim());
        try {
            // The class is package-private: the methods are made accessible for jinjava's reflective calls.
            final java.lang.reflect.Method raise = HfJinja.class.getDeclaredMethod("raiseException", Object.class);
            raise.setAccessible(true);
            final java.lang.reflect.Method now = HfJinja.class.getDeclaredMethod("strftimeNow", String.class);
            now.setAccessible(true);
            jinjava.registerFunction(new ELFunctionDefinition("", "raise_exception", raise));
            jinjava.registerFunction(new ELFunctionDefinition("", "strftime_now", now));
        } catch (final NoSuchMethodException ex) {
            throw new IllegalStateException(ex);
        }
        return jinjava;
    }

    /**
     * jinjava's Python-compatible behaviours but two: natural operator precedence, {@code {{-} trimming like
     * Jinja2, backslash escapes only in quotes, map keys evaluated, loops over maps yield keys, None kept in loops,
     * whitespace control parsed strictly. Not {@code whitespaceRequiredWithinTokens} (it stops {@code {%-} from
     * being read as a tag) and not {@code usePyishObjectMapper} (it prints strings with control characters
     * escaped, {@code \u0000} for a NUL, where Jinja2 prints them as they are).
     */
    static LegacyOverrides overrides() {
        return LegacyOverrides.newBuilder()
            .withEvaluateMapKeys(true)
            .withIterateOverMapKeys(true)
            .withUseNaturalOperatorPrecedence(true)
            .withParseWhitespaceControlStrictly(true)
            .withAllowAdjacentTextNodes(true)
            .withUseTrimmingForNotesAndExpressions(true)
            .withKeepNullableLoopValues(true)
            .withHandleBackslashInQuotesOnly(true)
            .build();
    }

    /**
     * Jinja2's reading of a template source: {@code \r\n} and {@code \r} become {@code \n}, and one trailing
     * newline is dropped ({@code keep_trailing_newline=False}).
     *
     * @param template the template as stored.
     * @return the template jinjava renders.
     */
    static String source(final String template) {
        final String s = template.replace("\r\n", "\n").replace('\r', '\n');
        return lstripBlocks(s.endsWith("\n") ? s.substring(0, s.length() - 1) : s);
    }

    /**
     * Jinja2's {@code lstrip_blocks}: spaces and tabs between the start of a line and a block or comment tag
     * ({@code {%}, {@code {#}, not {@code {%+} or {@code {%-}) are removed; {@code {%+} keeps them (the {@code +}
     * is dropped for jinjava). jinjava's own option strips whitespace before every block tag, also after text on
     * the same line ({@code a, {% if x %}} loses its space), so it is off and this runs on the source instead.
     * Text inside tags, expressions, comments and raw blocks is copied unchanged.
     */
    static String lstripBlocks(final String src) {
        final StringBuilder out = new StringBuilder(src.length());
        int i = 0;
        final int n = src.length();
        while (i < n) {
            final char c = src.charAt(i);
            if (c != '{' || i + 1 >= n || "%#{".indexOf(src.charAt(i + 1)) < 0) {
                out.append(c);
                i++;
                continue;
            }
            final char kind = src.charAt(i + 1);
            final boolean plus = kind != '{' && i + 2 < n && src.charAt(i + 2) == '+';
            final boolean minus = i + 2 < n && src.charAt(i + 2) == '-';
            if (kind != '{' && !plus && !minus) {
                int k = out.length();
                while (k > 0 && (out.charAt(k - 1) == ' ' || out.charAt(k - 1) == '\t')) {
                    k--;
                }
                if (k == 0 || out.charAt(k - 1) == '\n') {
                    out.setLength(k);
                }
            }
            final String close = kind == '%' ? "%}" : kind == '#' ? "#}" : "}}";
            final int end = tagEnd(src, i + 2, close);
            out.append(src, i, i + 2).append(src, plus ? i + 3 : i + 2, end);
            final boolean raw = kind == '%' && RAW.matcher(src.substring(i, end)).matches();
            i = end;
            if (raw) {
                final Matcher m = END_RAW.matcher(src);
                final int stop = m.find(i) ? m.start() : n;
                out.append(src, i, stop);
                i = stop;
            }
        }
        return out.toString();
    }

    private static final Pattern RAW = Pattern.compile("\\{%[-+]?\\s*raw\\s*-?%}");
    private static final Pattern END_RAW = Pattern.compile("\\{%[-+]?\\s*endraw\\s*-?%}");

    /** The index after the closing delimiter, skipping quoted strings. */
    private static int tagEnd(final String src, final int from, final String close) {
        char quote = 0;
        for (int j = from; j < src.length(); j++) {
            final char c = src.charAt(j);
            if (quote != 0) {
                if (c == '\\') {
                    j++;
                } else if (c == quote) {
                    quote = 0;
                }
            } else if ((c == '\'' || c == '"') && !"#}".equals(close)) {
                quote = c;
            } else if (src.startsWith(close, j)) {
                return j + close.length();
            }
        }
        return src.length();
    }

    /** Jinja's {@code raise_exception(message)}: fails the render. */
    public static Object raiseException(final Object message) {
        throw new TemplateRaisedException(RAISED + message);
    }

    /** Python's {@code datetime.now().strftime(format)}. */
    public static String strftimeNow(final String format) {
        return StrftimeFormatter.format(ZonedDateTime.now(), format);
    }

    /** What {@code raise_exception} throws. */
    static final class TemplateRaisedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        TemplateRaisedException(final String message) {
            super(message);
        }
    }

    /** jinjava with the slice-reading expression factory. */
    private static final class PyJinjava extends Jinjava {
        private final ExpressionFactoryImpl factory = PyExpressions.factory();

        PyJinjava(final JinjavaConfig config) {
            super(config);
        }

        @Override
        public ExpressionFactory getExpressionFactory() {
            return factory;
        }
    }

    /** transformers' {@code tojson}: {@code json.dumps(x, ensure_ascii=False, indent=None, ...)}. */
    static final class ToJson implements Filter {
        @Override
        public String getName() {
            return "tojson";
        }

        @Override
        public Object filter(final Object var, final JinjavaInterpreter interpreter, final String... args) {
            return filter(var, interpreter, args, Map.of());
        }

        @Override
        public Object filter(final Object var, final JinjavaInterpreter interpreter, final Object[] args,
            final Map<String, Object> kwargs) {
            final Object[] a = args == null ? new Object[0] : args;
            final Object indent = kwargs.getOrDefault("indent", a.length > 1 ? a[1] : null);
            final Object ensureAscii = kwargs.getOrDefault("ensure_ascii", a.length > 0 ? a[0] : Boolean.FALSE);
            final Object separators = kwargs.get("separators");
            final Object sortKeys = kwargs.getOrDefault("sort_keys", Boolean.FALSE);
            String itemSep = null;
            String keySep = null;
            if (separators instanceof java.util.List<?> l && l.size() == 2) {
                itemSep = String.valueOf(l.get(0));
                keySep = String.valueOf(l.get(1));
            } else if (separators != null) {
                throw new IllegalArgumentException("tojson: separators must be a pair of strings");
            }
            final String indentStr = switch (indent) {
                case null -> null;
                case Number n -> " ".repeat(Math.max(0, n.intValue()));
                case CharSequence s -> s.toString();
                default -> throw new IllegalArgumentException("tojson: indent must be an integer or a string");
            };
            return PyJson.dumps(var, Boolean.TRUE.equals(ensureAscii), indentStr, itemSep, keySep,
                Boolean.TRUE.equals(sortKeys));
        }
    }

    /** Jinja2's {@code trim}: Python's {@code str.strip(chars)}. */
    static final class Trim implements Filter {
        @Override
        public String getName() {
            return "trim";
        }

        @Override
        public Object filter(final Object var, final JinjavaInterpreter interpreter, final String... args) {
            if (var == null) {
                return "";
            }
            final String chars = args != null && args.length > 0 ? args[0] : null;
            return PyStrings.strip(var.toString(), chars, true, true);
        }
    }
}
