package io.kvidx.daemon.writer;

import io.kvidx.client.keys.vllm.MultiModalFeature;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The daemon's keys are the router's: random requests (block sizes, LoRA names, cache salts, multimodal items,
 * prompt-embeds digests) are turned into the BlockStored events vLLM publishes for them (split into chained events,
 * extra keys by vLLM's rule, either event shape), applied by a real writer agent to a real index, and queried with
 * the keys {@code RouterKeyHasher} computes for the same request: every block must match, and a router that gets
 * the salt or an item wrong must not match what that changes.
 */
class ExtraKeysPropertyTest {
    private static final String[] NAMES = {"Alice", "b", "\u00e9t\u00e9", "\u6a21\u578b", "x y", "0"};

    record Request(int blockSize, int[] tokens, String lora, String salt, List<MultiModalFeature> mm,
        byte[][] digests, int[] cuts, VllmPayloads.Shape shape) {
        int blocks() {
            return tokens.length / blockSize;
        }
    }

    @Provide
    Arbitrary<Request> requests() {
        return Arbitraries.longs().map(seed -> {
            final SplittableRandom r = new SplittableRandom(seed);
            final int bs = r.nextInt(4) == 0 ? 16 : 1 + r.nextInt(40);
            final int blocks = 1 + r.nextInt(12);
            final int[] tokens = r.ints(blocks * bs, 0, 150_000).toArray();
            final List<MultiModalFeature> mm = new ArrayList<>();
            for (int i = r.nextInt(5); i > 0; i--) {
                final int offset = r.nextInt(blocks * bs);
                final int length = 1 + r.nextInt(3 * bs);
                Arrays.fill(tokens, offset, Math.min(tokens.length, offset + length), 151_655);
                mm.add(new MultiModalFeature(r.nextInt(3) == 0 ? "shared-id" : "img-" + r.nextLong(), offset,
                    length));
            }
            mm.sort(Comparator.comparingInt(MultiModalFeature::offset));
            byte[][] digests = null;
            if (r.nextInt(4) == 0) {
                digests = new byte[blocks][32];
                for (final byte[] d : digests) {
                    r.nextBytes(d);
                }
            }
            final int events = 1 + r.nextInt(Math.min(3, blocks));
            final int[] cuts = blocks == 1 ? new int[0] : r.ints(events - 1, 1, blocks).sorted().distinct().toArray();
            return new Request(bs, tokens, r.nextInt(3) == 0 ? null : NAMES[r.nextInt(NAMES.length)],
                r.nextInt(3) == 0 ? null : NAMES[r.nextInt(NAMES.length)] + "-salt", mm, digests, cuts,
                r.nextBoolean() ? VllmPayloads.Shape.ARRAY : VllmPayloads.Shape.MAP);
        });
    }

    @Property(tries = 80)
    void shouldIndexEveryBlockUnderTheRoutersKey(@ForAll("requests") final Request q) throws Exception {
        final Path dir = Files.createTempDirectory("kvidx-extra-keys");
        final int bs = q.blockSize();
        final int n = q.blocks();
        try (HandWriter w = new HandWriter(dir, bs, ExtraKeysTest.MODEL)) {
            final long[] hashes = ExtraKeysTest.hashes(n, n);
            final VllmPayloads p = new VllmPayloads(q.shape(), VllmPayloads.HashWidth.UINT64);
            int from = 0;
            for (int e = 0; e <= q.cuts().length; e++) {
                final int to = e < q.cuts().length ? q.cuts()[e] : n;
                p.storedWithExtraKeys(Arrays.copyOfRange(hashes, from, to), from == 0 ? null : hashes[from - 1],
                    Arrays.copyOfRange(q.tokens(), from * bs, to * bs), bs, q.lora(),
                    ExtraKeysTest.vllmExtraKeys(bs, from, to - from, q.lora(), q.salt(), q.mm(), q.digests()));
                from = to;
            }
            w.apply(w.pod("pod"), p.batch(0));
            assertEquals(0, w.count(CounterType.BAD_EXTRA_KEYS), w.errors.dump());

            final long[] keys = ExtraKeysTest.routerKeys(bs, ExtraKeysTest.MODEL, q.lora(), q.salt(), q.tokens(),
                q.mm(), q.digests());
            assertEquals(n, w.depth("pod", keys, n), "the router's keys of " + q);

            final long[] otherSalt = ExtraKeysTest.routerKeys(bs, ExtraKeysTest.MODEL, q.lora(),
                q.salt() == null ? "s" : null, q.tokens(), q.mm(), q.digests());
            assertEquals(0, w.depth("pod", otherSalt, n), "another salt");
            if (!q.mm().isEmpty()) {
                // The first item under another identifier: the blocks before it still match, the rest do not.
                final List<MultiModalFeature> renamed = new ArrayList<>(q.mm());
                final MultiModalFeature f = renamed.get(0);
                renamed.set(0, new MultiModalFeature(f.identifier() + "'", f.offset(), f.length()));
                final long[] other = ExtraKeysTest.routerKeys(bs, ExtraKeysTest.MODEL, q.lora(), q.salt(),
                    q.tokens(), renamed, q.digests());
                assertEquals(f.offset() / bs, w.depth("pod", other, n), "another image at " + f.offset());
            }
        } finally {
            try (var files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
