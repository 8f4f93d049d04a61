package io.kvidx.tokenize;

import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELException;
import jinjava.javax.el.ELResolver;

import java.beans.FeatureDescriptor;
import java.util.Iterator;

/**
 * Resolves method calls on strings to Python's {@code str} methods ({@link PyStrings}), ahead of jinjava's bean
 * resolver (which would call Java's {@code String} methods, or fail on {@code startswith}). Resolves nothing else.
 *
 * <p><b>Note:</b> stateless and thread safe.
 */
final class PyStringResolver extends ELResolver {
    @Override
    public Object invoke(final ELContext context, final Object base, final Object method, final Class<?>[] paramTypes,
        final Object[] params) {
        if (!(base instanceof String s) || method == null || !PyStrings.has(method.toString())) {
            return null;
        }
        try {
            final Object result = PyStrings.call(s, method.toString(), params);
            context.setPropertyResolved(true);
            return result;
        } catch (final IllegalArgumentException ex) {
            throw new ELException(ex.getMessage(), ex);
        }
    }

    @Override
    public Object getValue(final ELContext context, final Object base, final Object property) {
        return null;
    }

    @Override
    public Class<?> getType(final ELContext context, final Object base, final Object property) {
        return null;
    }

    @Override
    public void setValue(final ELContext context, final Object base, final Object property, final Object value) {
        // resolves no properties
    }

    @Override
    public boolean isReadOnly(final ELContext context, final Object base, final Object property) {
        return true;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(final ELContext context, final Object base) {
        return null;
    }

    @Override
    public Class<?> getCommonPropertyType(final ELContext context, final Object base) {
        return null;
    }
}
