package io.kvidx.tokenize;

import com.hubspot.jinjava.el.ExtendedSyntaxBuilder;
import com.hubspot.jinjava.el.TruthyTypeConverter;
import com.hubspot.jinjava.el.ext.AstNamedParameter;
import com.hubspot.jinjava.el.ext.ExtendedParser;
import jinjava.de.odysseus.el.ExpressionFactoryImpl;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.TreeBuilder;
import jinjava.de.odysseus.el.tree.impl.Builder;
import jinjava.de.odysseus.el.tree.impl.Scanner;
import jinjava.de.odysseus.el.tree.impl.Scanner.Symbol;
import jinjava.de.odysseus.el.tree.impl.ast.AstBracket;
import jinjava.de.odysseus.el.tree.impl.ast.AstDot;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstParameters;
import jinjava.de.odysseus.el.tree.impl.ast.AstRightValue;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELException;

import java.io.Serial;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Python's extended slices ({@code seq[start:stop:step]}, e.g. {@code messages[::-1]} in Qwen3's template) and
 * keyword-argument precedence ({@code namespace(i=messages|length - 1)}) for jinjava's expression language, which
 * parses only {@code seq[start:stop]} and binds {@code =} like {@code +}. jinjava builds its parser through a
 * {@link TreeBuilder}; {@link #factory()} makes an expression factory whose builder makes a {@link Parser} that
 * reads the third part and evaluates every slice with Python's rules ({@link PyStrings#slice}).
 *
 * <p>The parser keeps jinjava's own rules for everything else and needs jinjava's natural operator precedence
 * ({@code LegacyOverrides.withUseNaturalOperatorPrecedence(true)}, set by {@link HfJinja}), under which
 * {@code value()} parses only primaries and their postfix operators.
 *
 * <p><b>Note:</b> the factory is thread safe (it caches parsed expressions in a synchronized store).
 */
final class PyExpressions {
    private PyExpressions() {
    }

    /** An expression factory whose parser reads Python slices. */
    static ExpressionFactoryImpl factory() {
        return new ExpressionFactoryImpl(new Properties(), new TruthyTypeConverter()) {
            @Override
            protected TreeBuilder createTreeBuilder(final Properties properties, final Builder.Feature... features) {
                return new SliceBuilder(features);
            }
        };
    }

    /** Makes {@link Parser}s. */
    static final class SliceBuilder extends ExtendedSyntaxBuilder {
        @Serial
        private static final long serialVersionUID = 1L;

        SliceBuilder(final Builder.Feature... features) {
            super(features);
        }

        @Override
        protected jinjava.de.odysseus.el.tree.impl.Parser createParser(final String expression) {
            return new Parser(this, expression);
        }
    }

    /** jinjava's parser with {@code [start:stop:step]}. */
    static final class Parser extends ExtendedParser {
        Parser(final Builder context, final String input) {
            super(context, input);
        }

        @Override
        protected AstNode value() throws Scanner.ScanException, ParseException {
            boolean lvalue = true;
            AstNode v = nonliteral();
            if (v == null) {
                v = literal();
                if (v == null) {
                    return null;
                }
                lvalue = false;
            }
            while (true) {
                final Symbol symbol = getToken().getSymbol();
                if (symbol == Symbol.DOT) {
                    consumeToken();
                    final String name = consumeToken(Symbol.IDENTIFIER).getImage();
                    final AstDot dot = createAstDot(v, name, lvalue);
                    v = methodCall() ? createAstMethod(dot, params()) : dot;
                } else if (symbol == Symbol.LBRACK) {
                    consumeToken();
                    final AstNode first = getToken().getSymbol() == Symbol.COLON ? null : expr(true);
                    if (getToken().getSymbol() == Symbol.RBRACK) {
                        consumeToken();
                        final AstBracket bracket = createAstBracket(v, first, lvalue,
                            !context.isEnabled(Builder.Feature.NULL_PROPERTIES));
                        v = methodCall() ? createAstMethod(bracket, params()) : bracket;
                    } else {
                        consumeToken(Symbol.COLON);
                        final AstNode stop = sliceEnd() ? null : expr(true);
                        AstNode step = null;
                        if (getToken().getSymbol() == Symbol.COLON) {
                            consumeToken();
                            step = getToken().getSymbol() == Symbol.RBRACK ? null : expr(true);
                        }
                        consumeToken(Symbol.RBRACK);
                        v = new Slice(v, first, stop, step);
                    }
                } else {
                    return v;
                }
            }
        }

        /**
         * Call arguments with Python's keyword arguments: in {@code f(a=x - 1)} the keyword takes the whole
         * expression (jinjava binds {@code =} like {@code +}, giving {@code (a=x) - 1}).
         */
        @Override
        protected AstParameters params(final Symbol left, final Symbol right)
            throws Scanner.ScanException, ParseException {
            consumeToken(left);
            final List<AstNode> args = new ArrayList<>();
            if (getToken().getSymbol() != right) {
                args.add(argument());
                while (getToken().getSymbol() == Symbol.COMMA) {
                    consumeToken();
                    args.add(argument());
                }
            }
            consumeToken(right);
            return createAstParameters(args);
        }

        private AstNode argument() throws Scanner.ScanException, ParseException {
            if (getToken().getSymbol() == Symbol.IDENTIFIER && lookahead(0).getSymbol() == Symbol.EXTENSION
                && "=".equals(lookahead(0).getImage())) {
                final String name = consumeToken().getImage();
                consumeToken();
                return new AstNamedParameter(identifier(name), expr(true));
            }
            return expr(true);
        }

        private boolean sliceEnd() {
            final Symbol s = getToken().getSymbol();
            return s == Symbol.COLON || s == Symbol.RBRACK;
        }

        private boolean methodCall() {
            return getToken().getSymbol() == Symbol.LPAREN && context.isEnabled(Builder.Feature.METHOD_INVOCATIONS);
        }
    }

    /** {@code base[start:stop:step]} with Python's semantics, for strings and lists. */
    static final class Slice extends AstRightValue {
        private final AstNode base;
        private final AstNode start;
        private final AstNode stop;
        private final AstNode step;

        Slice(final AstNode base, final AstNode start, final AstNode stop, final AstNode step) {
            this.base = base;
            this.start = start;
            this.stop = stop;
            this.step = step;
        }

        @Override
        public Object eval(final Bindings bindings, final ELContext context) {
            final Object seq = base.eval(bindings, context);
            try {
                return PyStrings.slice(seq, bound(start, bindings, context), bound(stop, bindings, context),
                    bound(step, bindings, context));
            } catch (final IllegalArgumentException ex) {
                throw new ELException(ex.getMessage(), ex);
            }
        }

        private static Long bound(final AstNode node, final Bindings bindings, final ELContext context) {
            if (node == null) {
                return null;
            }
            final Object v = node.eval(bindings, context);
            if (v == null) {
                return null;
            }
            if (v instanceof Number n && !(v instanceof Double) && !(v instanceof Float)) {
                return n.longValue();
            }
            throw new ELException("slice indices must be integers or None, not " + v.getClass().getSimpleName());
        }

        @Override
        public void appendStructure(final StringBuilder b, final Bindings bindings) {
            base.appendStructure(b, bindings);
            b.append('[');
            append(b, start, bindings);
            b.append(':');
            append(b, stop, bindings);
            b.append(':');
            append(b, step, bindings);
            b.append(']');
        }

        private static void append(final StringBuilder b, final AstNode node, final Bindings bindings) {
            if (node != null) {
                node.appendStructure(b, bindings);
            }
        }

        @Override
        public int getCardinality() {
            return 4;
        }

        @Override
        public AstNode getChild(final int i) {
            return switch (i) {
                case 0 -> base;
                case 1 -> start;
                case 2 -> stop;
                case 3 -> step;
                default -> null;
            };
        }

        @Override
        public String toString() {
            return "[::]";
        }
    }
}
