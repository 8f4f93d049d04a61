package io.kvidx.tools;

/**
 * The commands that tokenize ({@code query --text/--messages}, {@code demo --tokenizer}) need the tokenize module,
 * which the daemon's jar does not carry (it is 33 MB of native tokenizers the daemon never runs): {@code ./kvidx}
 * adds {@code tokenize/target/kvidx-tokenizer.jar} to the class path for them. Run otherwise, they fail with this
 * message rather than a {@link NoClassDefFoundError}.
 */
final class TokenizerJar {
    private TokenizerJar() {
    }

    /**
     * @param what the option that needs the tokenizer, for the message.
     * @throws IllegalArgumentException when the tokenizer's classes are not on the class path.
     */
    static void require(final String what) {
        try {
            Class.forName("io.kvidx.tokenize.HfTokenizer", false, TokenizerJar.class.getClassLoader());
        } catch (final ClassNotFoundException | LinkageError ex) {
            throw new IllegalArgumentException(what + " needs the tokenizer, which the daemon's jar does not carry:"
                + " run it through ./kvidx (which adds tokenize/target/kvidx-tokenizer.jar), or put that jar on the"
                + " class path: java -cp kvidx.jar:kvidx-tokenizer.jar io.kvidx.daemon.cli.KvidxCli ...");
        }
    }
}
