/**
 * Broken twins of the tests in {@link io.kvidx.jcstress}: the same races with one step of the publication protocol
 * removed (a reader that does not re-check the seqlock version, a writer that does not make it odd, a reader that
 * loads the data word before the key), to show that the step is what keeps the forbidden outcome away. Their torn
 * outcomes are {@code ACCEPTABLE_INTERESTING}: jcstress reports how often each appeared. The re-implemented reads
 * and the one re-implemented writer step are {@link io.kvidx.jcstress.broken.BrokenReads} and
 * {@link io.kvidx.jcstress.broken.BrokenWrites}: copies of the real code with that step left out.
 */
package io.kvidx.jcstress.broken;
