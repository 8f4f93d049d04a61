package io.kvidx.tools.demo;

/**
 * The demo's requests as the simulated fleet serves them: conversations drawn with a skew, each request the
 * router-key chain of one of its prompts.
 *
 * <p><b>Note:</b> implementations are not thread safe; one instance per thread.
 */
public interface RequestStream {
    /**
     * @return a conversation id from this side's stream.
     */
    int nextConversation();

    /**
     * @param bound exclusive bound.
     * @return a uniform random int from this side's stream.
     */
    int nextInt(int bound);

    /**
     * Writes the router-key chain of a request of conversation {@code c}.
     *
     * @param c    conversation id.
     * @param keys output, at least {@link #maxChain()} long.
     * @return chain length.
     */
    int chain(int c, long[] keys);

    /**
     * @return longest chain in blocks.
     */
    int maxChain();
}
