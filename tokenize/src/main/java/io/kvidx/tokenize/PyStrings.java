package io.kvidx.tokenize;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * Python's {@code str} methods and slices with Python's semantics, for chat templates written against Python's
 * Jinja2 (where {@code message.content.split('</think>')[-1]} calls Python's {@code str.split}). Java's look-alikes
 * differ: {@code String.split} takes a regular expression and drops trailing empty strings, {@code String.strip}
 * knows fewer whitespace characters, and Java indexes UTF-16 units where Python indexes code points.
 *
 * <p><b>Note:</b> stateless and thread safe.
 */
final class PyStrings {
    private PyStrings() {
    }

    /**
     * Python's {@code str.isspace} for one code point: the characters Python counts as whitespace (bidirectional
     * class WS, B or S, or category Zs).
     */
    static boolean isSpace(final int cp) {
        return switch (cp) {
            case '\t', '\n', 0x0B, 0x0C, '\r', 0x1C, 0x1D, 0x1E, 0x1F, ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029,
                 0x202F, 0x205F, 0x3000 -> true;
            default -> cp >= 0x2000 && cp <= 0x200A;
        };
    }

    /**
     * Calls a Python {@code str} method.
     *
     * @param s      the string.
     * @param method the method's name.
     * @param args   its positional arguments.
     * @return the result.
     * @throws UnsupportedOperationException when {@code method} is not one of the methods implemented (the caller
     *                                       then tries Java's methods).
     * @throws IllegalArgumentException      for arguments Python would reject.
     */
    static Object call(final String s, final String method, final Object[] args) {
        final Object[] a = args == null ? new Object[0] : args;
        return switch (method) {
            case "startswith" -> affix(s, method, a, true);
            case "endswith" -> affix(s, method, a, false);
            case "strip" -> strip(s, chars(method, a), true, true);
            case "lstrip" -> strip(s, chars(method, a), true, false);
            case "rstrip" -> strip(s, chars(method, a), false, true);
            case "split" -> split(s, sep(method, a), maxSplit(method, a));
            case "rsplit" -> rsplit(s, sep(method, a), maxSplit(method, a));
            case "splitlines" -> splitLines(s);
            case "upper" -> noArgs(s, method, a).toUpperCase(Locale.ROOT);
            case "lower" -> noArgs(s, method, a).toLowerCase(Locale.ROOT);
            case "title" -> title(noArgs(s, method, a));
            case "capitalize" -> capitalize(noArgs(s, method, a));
            case "replace" -> replace(s, a);
            case "find" -> find(s, str(method, a, 0), false);
            case "rfind" -> find(s, str(method, a, 0), true);
            case "count" -> count(s, str(method, a, 0));
            case "join" -> join(s, a);
            case "removeprefix" -> s.startsWith(str(method, a, 0)) ? s.substring(str(method, a, 0).length()) : s;
            case "removesuffix" -> {
                final String x = str(method, a, 0);
                yield !x.isEmpty() && s.endsWith(x) ? s.substring(0, s.length() - x.length()) : s;
            }
            case "isspace" -> !noArgs(s, method, a).isEmpty() && s.codePoints().allMatch(PyStrings::isSpace);
            case "isdigit" -> !noArgs(s, method, a).isEmpty() && s.codePoints().allMatch(Character::isDigit);
            case "isalpha" -> !noArgs(s, method, a).isEmpty() && s.codePoints().allMatch(Character::isLetter);
            case "isalnum" -> !noArgs(s, method, a).isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit);
            case "islower" -> cased(noArgs(s, method, a), true);
            case "isupper" -> cased(noArgs(s, method, a), false);
            default -> throw new UnsupportedOperationException(method);
        };
    }

    /** The method names {@link #call} implements. */
    static boolean has(final String method) {
        return switch (method) {
            case "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "upper",
                 "lower", "title", "capitalize", "replace", "find", "rfind", "count", "join", "removeprefix",
                 "removesuffix", "isspace", "isdigit", "isalpha", "isalnum", "islower", "isupper" -> true;
            default -> false;
        };
    }

    private static String noArgs(final String s, final String method, final Object[] a) {
        if (a.length != 0) {
            throw new IllegalArgumentException("str." + method + "() takes no arguments (" + a.length + " given)");
        }
        return s;
    }

    private static String str(final String method, final Object[] a, final int i) {
        if (a.length <= i || !(a[i] instanceof CharSequence)) {
            throw new IllegalArgumentException("str." + method + "() argument " + (i + 1) + " must be a string");
        }
        return a[i].toString();
    }

    private static boolean affix(final String s, final String method, final Object[] a, final boolean prefix) {
        if (a.length != 1) {
            throw new IllegalArgumentException("str." + method + "() takes 1 argument here (" + a.length + " given)");
        }
        if (a[0] instanceof CharSequence x) {
            return prefix ? s.startsWith(x.toString()) : s.endsWith(x.toString());
        }
        if (a[0] instanceof Collection<?> c) {
            for (final Object o : c) {
                if (!(o instanceof CharSequence x)) {
                    throw new IllegalArgumentException("str." + method + "() tuple must hold strings");
                }
                if (prefix ? s.startsWith(x.toString()) : s.endsWith(x.toString())) {
                    return true;
                }
            }
            return false;
        }
        throw new IllegalArgumentException("str." + method + "() argument must be a string or a tuple of strings");
    }

    private static String chars(final String method, final Object[] a) {
        if (a.length == 0 || a[0] == null) {
            return null;
        }
        if (a.length > 1) {
            throw new IllegalArgumentException("str." + method + "() takes at most 1 argument");
        }
        return str(method, a, 0);
    }

    /** Python's strip: {@code chars} null strips whitespace, else any of its code points. */
    static String strip(final String s, final String chars, final boolean left, final boolean right) {
        int start = 0;
        int end = s.length();
        if (left) {
            while (start < end) {
                final int cp = s.codePointAt(start);
                if (!stripped(cp, chars)) {
                    break;
                }
                start += Character.charCount(cp);
            }
        }
        if (right) {
            while (end > start) {
                final int cp = s.codePointBefore(end);
                if (!stripped(cp, chars)) {
                    break;
                }
                end -= Character.charCount(cp);
            }
        }
        return s.substring(start, end);
    }

    private static boolean stripped(final int cp, final String chars) {
        return chars == null ? isSpace(cp) : chars.indexOf(cp) >= 0;
    }

    private static String sep(final String method, final Object[] a) {
        if (a.length == 0 || a[0] == null) {
            return null;
        }
        final String sep = str(method, a, 0);
        if (sep.isEmpty()) {
            throw new IllegalArgumentException("str." + method + "(): empty separator");
        }
        return sep;
    }

    private static int maxSplit(final String method, final Object[] a) {
        if (a.length < 2) {
            return -1;
        }
        if (a.length > 2 || !(a[1] instanceof Number n)) {
            throw new IllegalArgumentException("str." + method + "() takes a separator and an integer maxsplit");
        }
        return n.intValue();
    }

    /** Python's {@code str.split(sep, maxsplit)}. */
    static List<String> split(final String s, final String sep, final int maxSplit) {
        final List<String> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            final int n = s.length();
            int splits = 0;
            while (true) {
                while (i < n && isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                if (i >= n) {
                    return out;
                }
                if (maxSplit >= 0 && splits == maxSplit) {
                    out.add(s.substring(i));
                    return out;
                }
                int j = i;
                while (j < n && !isSpace(s.codePointAt(j))) {
                    j += Character.charCount(s.codePointAt(j));
                }
                out.add(s.substring(i, j));
                splits++;
                i = j;
            }
        }
        int from = 0;
        int splits = 0;
        while (maxSplit < 0 || splits < maxSplit) {
            final int at = s.indexOf(sep, from);
            if (at < 0) {
                break;
            }
            out.add(s.substring(from, at));
            from = at + sep.length();
            splits++;
        }
        out.add(s.substring(from));
        return out;
    }

    /** Python's {@code str.rsplit(sep, maxsplit)}. */
    static List<String> rsplit(final String s, final String sep, final int maxSplit) {
        if (maxSplit < 0) {
            return split(s, sep, maxSplit);
        }
        final List<String> out = new ArrayList<>();
        if (sep == null) {
            int j = s.length();
            int splits = 0;
            while (true) {
                while (j > 0 && isSpace(s.codePointBefore(j))) {
                    j -= Character.charCount(s.codePointBefore(j));
                }
                if (j <= 0) {
                    break;
                }
                if (splits == maxSplit) {
                    out.add(s.substring(0, j));
                    break;
                }
                int i = j;
                while (i > 0 && !isSpace(s.codePointBefore(i))) {
                    i -= Character.charCount(s.codePointBefore(i));
                }
                out.add(s.substring(i, j));
                splits++;
                j = i;
            }
        } else {
            int end = s.length();
            int splits = 0;
            while (splits < maxSplit) {
                final int at = s.lastIndexOf(sep, end - sep.length());
                if (at < 0) {
                    break;
                }
                out.add(s.substring(at + sep.length(), end));
                end = at;
                splits++;
            }
            out.add(s.substring(0, end));
        }
        Collections.reverse(out);
        return out;
    }

    /** Python's {@code str.splitlines()} (line ends dropped). */
    static List<String> splitLines(final String s) {
        final List<String> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        final int n = s.length();
        while (i < n) {
            final char c = s.charAt(i);
            final boolean eol = switch (c) {
                case '\n', '\r', 0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029 -> true;
                default -> false;
            };
            if (eol) {
                out.add(s.substring(start, i));
                i += c == '\r' && i + 1 < n && s.charAt(i + 1) == '\n' ? 2 : 1;
                start = i;
            } else {
                i++;
            }
        }
        if (start < n) {
            out.add(s.substring(start));
        }
        return out;
    }

    private static String title(final String s) {
        final StringBuilder b = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); ) {
            final int cp = s.codePointAt(i);
            if (prevCased) {
                b.appendCodePoint(Character.toLowerCase(cp));
            } else {
                b.appendCodePoint(Character.toTitleCase(cp));
            }
            prevCased = Character.isUpperCase(cp) || Character.isLowerCase(cp) || Character.isTitleCase(cp);
            i += Character.charCount(cp);
        }
        return b.toString();
    }

    private static String capitalize(final String s) {
        if (s.isEmpty()) {
            return s;
        }
        final int first = s.codePointAt(0);
        return new StringBuilder().appendCodePoint(Character.toTitleCase(first))
            .append(s.substring(Character.charCount(first)).toLowerCase(Locale.ROOT)).toString();
    }

    private static String replace(final String s, final Object[] a) {
        if (a.length < 2 || a.length > 3) {
            throw new IllegalArgumentException("str.replace() takes 2 or 3 arguments (" + a.length + " given)");
        }
        final String old = str("replace", a, 0);
        final String repl = str("replace", a, 1);
        int count = -1;
        if (a.length == 3) {
            if (!(a[2] instanceof Number n)) {
                throw new IllegalArgumentException("str.replace() count must be an integer");
            }
            count = n.intValue();
        }
        if (count < 0) {
            return s.replace(old, repl);
        }
        final StringBuilder b = new StringBuilder();
        int from = 0;
        int done = 0;
        if (old.isEmpty()) {
            // Python inserts the replacement before every code point and at the end, up to count times.
            int i = 0;
            while (done < count && i <= s.length()) {
                b.append(repl);
                done++;
                if (i < s.length()) {
                    final int cp = s.codePointAt(i);
                    b.appendCodePoint(cp);
                    i += Character.charCount(cp);
                } else {
                    i++;
                }
            }
            return i <= s.length() ? b.append(s, i, s.length()).toString() : b.toString();
        }
        while (done < count) {
            final int at = s.indexOf(old, from);
            if (at < 0) {
                break;
            }
            b.append(s, from, at).append(repl);
            from = at + old.length();
            done++;
        }
        return b.append(s.substring(from)).toString();
    }

    /** Python's {@code find}/{@code rfind}: the code-point index, or -1. */
    private static int find(final String s, final String sub, final boolean last) {
        final int at = last ? s.lastIndexOf(sub) : s.indexOf(sub);
        return at < 0 ? -1 : s.codePointCount(0, at);
    }

    private static int count(final String s, final String sub) {
        if (sub.isEmpty()) {
            return s.codePointCount(0, s.length()) + 1;
        }
        int n = 0;
        int from = 0;
        while (true) {
            final int at = s.indexOf(sub, from);
            if (at < 0) {
                return n;
            }
            n++;
            from = at + sub.length();
        }
    }

    private static String join(final String s, final Object[] a) {
        if (a.length != 1 || !(a[0] instanceof Iterable<?> items)) {
            throw new IllegalArgumentException("str.join() takes one iterable of strings");
        }
        final StringBuilder b = new StringBuilder();
        boolean first = true;
        for (final Object o : items) {
            if (!(o instanceof CharSequence x)) {
                throw new IllegalArgumentException("str.join(): sequence item is not a string");
            }
            if (!first) {
                b.append(s);
            }
            b.append(x);
            first = false;
        }
        return b.toString();
    }

    private static boolean cased(final String s, final boolean lower) {
        boolean any = false;
        for (int i = 0; i < s.length(); ) {
            final int cp = s.codePointAt(i);
            if (lower ? Character.isUpperCase(cp) || Character.isTitleCase(cp) : Character.isLowerCase(cp)) {
                return false;
            }
            any |= lower ? Character.isLowerCase(cp) : Character.isUpperCase(cp);
            i += Character.charCount(cp);
        }
        return any;
    }

    /**
     * Python's {@code seq[start:stop:step]} for a string (by code points) or a list.
     *
     * @param seq   a string or a list.
     * @param start first index, or null.
     * @param stop  end index, or null.
     * @param step  step (not 0), or null for 1.
     * @return the slice, of the same kind.
     */
    static Object slice(final Object seq, final Long start, final Long stop, final Long step) {
        final long st = step == null ? 1 : step;
        if (st == 0) {
            throw new IllegalArgumentException("slice step cannot be zero");
        }
        if (seq instanceof CharSequence cs) {
            final int[] cps = cs.toString().codePoints().toArray();
            final int[] idx = indices(cps.length, start, stop, st);
            final StringBuilder b = new StringBuilder(idx.length);
            for (final int i : idx) {
                b.appendCodePoint(cps[i]);
            }
            return b.toString();
        }
        if (seq instanceof List<?> list) {
            final int[] idx = indices(list.size(), start, stop, st);
            final List<Object> out = new ArrayList<>(idx.length);
            for (final int i : idx) {
                out.add(list.get(i));
            }
            return out;
        }
        if (seq == null) {
            throw new IllegalArgumentException("cannot slice None (undefined)");
        }
        throw new IllegalArgumentException("cannot slice a " + seq.getClass().getSimpleName());
    }

    /** The indices Python's {@code slice(start, stop, step).indices(len)} visits. */
    private static int[] indices(final int len, final Long start, final Long stop, final long step) {
        final long lo;
        final long hi;
        if (step > 0) {
            lo = start == null ? 0 : clamp(start, len, 0, len);
            hi = stop == null ? len : clamp(stop, len, 0, len);
            final long n = hi > lo ? (hi - lo + step - 1) / step : 0;
            final int[] out = new int[(int) n];
            for (int k = 0; k < n; k++) {
                out[k] = (int) (lo + k * step);
            }
            return out;
        }
        lo = start == null ? len - 1 : clamp(start, len, -1, len - 1);
        hi = stop == null ? -1 : clamp(stop, len, -1, len - 1);
        final long n = lo > hi ? (lo - hi - step - 1) / -step : 0;
        final int[] out = new int[(int) n];
        for (int k = 0; k < n; k++) {
            out[k] = (int) (lo + k * step);
        }
        return out;
    }

    private static long clamp(final long i, final int len, final long min, final long max) {
        final long j = i < 0 ? i + len : i;
        return Math.max(min, Math.min(max, j));
    }
}
