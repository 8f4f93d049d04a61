package io.kvidx.router;

import io.kvidx.tokenize.ChatRequest;
import io.kvidx.tokenize.ChatTemplate;
import io.kvidx.tokenize.HfTokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URISyntaxException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Text and chat requests through the router: its default profile tokenizes them with the model's Hugging Face
 * tokenizer and chat template (Qwen3's, the tokenize module's test data) before keying, so a prompt sent as text is
 * routed to the pod that holds the same prompt's token ids. Each engine is first given its prompt as token ids
 * (tokenized here exactly as vLLM's completion and chat endpoints do); the router then gets text. Fails when the
 * router stops handing text to the tokenizing stage (FrontHandler.fill: meta.prompt / meta.chat), or the default
 * profile loses its tokenize stage (RouterConfig.routingDocument).
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RouterTextTest {
    private static final String MODEL = "m";

    @Test
    void shouldRouteTextAndChatsToThePodHoldingTheirTokens() throws Exception {
        MockEngine.require();
        final Path qwen3 = qwen3();
        final String text = "You are a careful assistant. "
            + "Summarise the quarterly report in plain words. ".repeat(40);
        final String chatBody = "{\"model\": \"" + MODEL + "\", \"messages\": [{\"role\": \"system\", \"content\": "
            + "\"You answer in French. " + "Translate every sentence faithfully and keep the tone. ".repeat(30)
            + "\"}, {\"role\": \"user\", \"content\": \"Bonjour\"}], \"max_tokens\": 2}";
        final int[] textIds;
        final int[] chatIds;
        try (HfTokenizer completion = HfTokenizer.load(qwen3, true);
            HfTokenizer chat = HfTokenizer.load(qwen3, false)) {
            textIds = completion.encode(text);
            chatIds = chat.encode(ChatTemplate.load(qwen3).render(ChatRequest.parse(chatBody), Map.of()));
        }
        assertTrue(textIds.length > 200 && chatIds.length > 200, textIds.length + " / " + chatIds.length);
        final Path work = Routers.shmDir("router-text");
        final Path dir = work.resolve("index");
        try (MockEngine a = MockEngine.start(work, "pod-a", MODEL);
            MockEngine b = MockEngine.start(work, "pod-b", MODEL);
            DaemonProcess daemon = DaemonProcess.start(dir, "c", work.resolve("daemon.log"), "--max-pods", "8",
                "--zmq", "pod-a@" + MODEL + "=" + a.zmqPub(), "--replay", "pod-a=" + a.zmqReplay(),
                "--zmq", "pod-b@" + MODEL + "=" + b.zmqPub(), "--replay", "pod-b=" + b.zmqReplay())) {
            final RouterConfig c = Routers.config(work);
            c.dir = dir.toString();
            c.cell = "c";
            c.tokenizer = qwen3;
            c.pod("pod-a", a.url(), MODEL, null);
            c.pod("pod-b", b.url(), MODEL, null);
            try (RouterServer router = RouterServer.start(c)) {
                assertEquals(200, a.post("/v1/completions", "{\"prompt\": " + json(textIds) + ", \"max_tokens\": 1}")
                    .statusCode());
                assertEquals(200, b.post("/v1/completions", "{\"prompt\": " + json(chatIds) + ", \"max_tokens\": 1}")
                    .statusCode());
                Routers.await("the index showing both pods", 10_000, () -> router.index.isAvailable()
                    && router.pods.routable() == 2);
                final int textBlocks = (textIds.length - 1) / 16;
                final int chatBlocks = (chatIds.length - 1) / 16;
                Routers.await("the router predicting each pod's prompt", 10_000, () -> {
                    final HttpResponse<String> t = Routers.post(router.port(), "/v1/completions", "{\"model\": \""
                        + MODEL + "\", \"prompt\": " + quote(text) + ", \"max_tokens\": 2}");
                    final HttpResponse<String> ch = Routers.post(router.port(), "/v1/chat/completions", chatBody);
                    return t.statusCode() == 200 && ch.statusCode() == 200
                        && "pod-a".equals(t.headers().firstValue("x-kvidx-pod").orElse(""))
                        && predicted(t) >= 16L * textBlocks
                        && "pod-b".equals(ch.headers().firstValue("x-kvidx-pod").orElse(""))
                        && predicted(ch) >= 16L * chatBlocks;
                });
                final String page = Routers.metrics(router);
                assertEquals(0, Metrics.value(page, "kvidx_router_tokenize_rejected_total"), page);
            } catch (final AssertionError ex) {
                throw new AssertionError(ex.getMessage() + "; daemon log:\n" + daemon.tail(), ex);
            }
        } finally {
            Routers.deleteTree(work);
        }
    }

    private static long predicted(final HttpResponse<String> r) {
        return Long.parseLong(r.headers().firstValue("x-kvidx-predicted-tokens").orElse("-1"));
    }

    private static Path qwen3() throws URISyntaxException {
        return Path.of(RouterTextTest.class.getResource("/qwen3/tokenizer.json").toURI()).getParent();
    }

    private static String json(final int[] ids) {
        return Arrays.stream(ids).mapToObj(Integer::toString).collect(Collectors.joining(",", "[", "]"));
    }

    private static String quote(final String s) {
        final List<String> parts = new ArrayList<>();
        for (final char ch : s.toCharArray()) {
            parts.add(ch == '"' || ch == '\\' ? "\\" + ch : String.valueOf(ch));
        }
        return "\"" + String.join("", parts) + "\"";
    }
}
