package io.kvidx.routing.exec;

import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.BiConsumer;

/**
 * One request carried out under the {@link ProxyPolicy}: which stage it is in, which pod the next call goes to and
 * with which headers, what a failure or an answer means, and the attempts so far. Transport-free and non-blocking: a
 * transport asks for the {@link #call()}, sends it, and reports back ({@link #started}, {@link #retries},
 * {@link #failed}, {@link #prefilled}, {@link #ended}); the exchange replans through the router's workflow and
 * counts the pods' load.
 *
 * <pre>
 *   call() == null          -> no pod for this stage: answer 503 with {@link #noPodMessage()}
 *   call().endpoint == null -> failed("pod ... has no URL")
 *   connected, sent         -> started()
 *   head: retries(status)   -> failed("answered HTTP 503"); else prefill: read the whole answer, then
 *                              prefilled() and call() again with decodeBody(); else stream the answer to the client
 *   failed(...) == false    -> the stage's attempts are spent: answer 502 with {@link #spentMessage()}
 *   answer ended or broke   -> ended() (a stream broken after its first byte is not retried)
 * </pre>
 *
 * <p><b>Note:</b> used by one thread at a time (a Netty call's event loop, or an executing thread).
 */
public final class ProxyExchange {
    /** A request's stages. */
    public enum Stage {
        /** One pod answers the whole request. */
        SINGLE,
        /** The prefill pod computes the prompt's KV cache; its whole answer goes to the decode stage. */
        PREFILL,
        /** The decode pod answers the client, given the prefill pod's answer. */
        DECODE;

        private final String label = name().toLowerCase(Locale.ROOT);

        /**
         * @return the stage's name in metrics and messages ({@code single}, {@code prefill}, {@code decode}).
         */
        public String label() {
            return label;
        }
    }

    /**
     * One call to a pod.
     *
     * @param stage    the stage it serves.
     * @param slot     the pod.
     * @param endpoint the base URL to call (the pod's, or its engine's for a rank pod), or null when it has none.
     * @param rank     the data-parallel rank header's value, or null for none.
     * @param hint     the cache hint header's value, or null for none.
     * @param hintName the cache hint header's name, or null.
     */
    public record Call(Stage stage, int slot, URI endpoint, String rank, String hint, String hintName) {
        /**
         * The request path on the pod: the endpoint's own path (without a trailing slash) and the client's.
         *
         * @param path the client's path ({@code /v1/completions}).
         * @return the pod's path.
         */
        public String path(final String path) {
            final String base = endpoint.getRawPath() == null ? "" : endpoint.getRawPath();
            if (base.isEmpty() || "/".equals(base)) {
                return path; // the common case: no new string per call
            }
            return (base.endsWith("/") ? base.substring(0, base.length() - 1) : base) + path;
        }

        /**
         * Sets the headers the policy adds to every call (after the client's that
         * {@link ProxyPolicy#forwardsRequestHeader} lets through): Content-Type, the rank header, the cache hint.
         * Host, Content-Length and Connection are the transport's.
         *
         * @param set sets one header (name, value).
         */
        public void headers(final BiConsumer<String, String> set) {
            set.accept("Content-Type", ProxyPolicy.CONTENT_TYPE);
            if (rank != null) {
                set.accept(io.kvidx.client.index.DataParallelRanks.HEADER, rank);
            }
            if (hint != null) {
                set.accept(hintName, hint);
            }
        }
    }

    private final ProxyPolicy policy;
    private final RoutingContext ctx;
    private final int promptTokens;
    /** Made at the first failure: an exchange that succeeds at once allocates neither. */
    private List<ExecutionException.Attempt> failures;
    private StringBuilder summary;
    private RoutingPlan plan;
    private Stage stage;
    private int slot;
    private int prefillSlot = RoutingPlan.NO_POD;
    private int stageAttempts;
    private int attempts;
    private boolean counted;

    ProxyExchange(final ProxyPolicy policy, final RoutingContext ctx, final RoutingPlan plan, final int promptTokens) {
        this.policy = policy;
        this.ctx = ctx;
        this.plan = plan;
        this.promptTokens = promptTokens;
        if (plan.kind() == RoutingPlan.Kind.PREFILL_DECODE) {
            stage = Stage.PREFILL;
            slot = plan.prefillSlot();
        } else {
            stage = Stage.SINGLE;
            slot = plan.slot();
        }
    }

    /**
     * The next call: to the stage's planned pod, with its target and headers; counts an attempt.
     *
     * @return the call, or null when the plan has no pod for this stage (for prefill: no prefill or no decode pod).
     */
    public Call call() {
        if (stage == Stage.PREFILL ? !plan.isRoutable() : slot == RoutingPlan.NO_POD) {
            return null;
        }
        attempts++;
        stageAttempts++;
        final ProxyPolicy.Target target = policy.target(slot);
        return new Call(stage, slot, target == null ? null : target.endpoint(), target == null ? null : target.rank(),
            policy.hintValue(ctx, slot), policy.hintHeader());
    }

    /** The call was sent: the pod's running requests count it until {@link #ended}. */
    public void started() {
        if (!counted) {
            policy.registry().requestStarted(slot, promptTokens);
            counted = true;
        }
    }

    /** The call ended, however: its pod stops counting it. Idempotent. */
    public void ended() {
        if (counted) {
            policy.registry().requestFinished(slot, promptTokens);
            counted = false;
        }
    }

    /**
     * @param status the pod's HTTP status.
     * @return true when the answer is a failure to try elsewhere ({@link #failed}): for prefill anything but 2xx,
     * else 5xx.
     */
    public boolean retries(final int status) {
        return stage == Stage.PREFILL ? status / 100 != 2 : status >= 500;
    }

    /**
     * The call failed before any byte reached the client: recorded, the call ended, and the pod excluded and the
     * request replanned when the stage has attempts left.
     *
     * @param detail what went wrong.
     * @return true when {@link #call()} gives the next attempt, false when the stage's attempts are spent.
     */
    public boolean failed(final String detail) {
        ended();
        record(detail);
        if (stageAttempts >= policy.maxAttempts()) {
            return false;
        }
        final int failed = slot;
        plan = stage == Stage.DECODE ? policy.router().workflow().replanDecode(ctx, failed)
            : policy.router().workflow().replan(ctx, failed);
        slot = stage == Stage.PREFILL ? plan.prefillSlot() : plan.slot();
        return true;
    }

    /**
     * The pod broke off an answer after its first byte reached the client: recorded and ended, not retried.
     *
     * @param detail what went wrong.
     */
    public void brokeOff(final String detail) {
        ended();
        record(detail);
    }

    private void record(final String detail) {
        if (failures == null) {
            failures = new ArrayList<>(2);
            summary = new StringBuilder();
        }
        failures.add(new ExecutionException.Attempt(stage.label(), slot, detail));
        summary.append(summary.isEmpty() ? ": " : "; ").append(stage.label()).append(" pod ")
            .append(policy.registry().podId(slot)).append(": ").append(detail);
    }

    /**
     * @param clientBody the client's body.
     * @return the prefill pod's body.
     */
    public byte[] prefillBody(final byte[] clientBody) {
        return policy.adapter().prefillBody(clientBody);
    }

    /**
     * @param clientBody    the client's body.
     * @param prefillAnswer the prefill pod's whole answer.
     * @return the decode pod's body.
     */
    public byte[] decodeBody(final byte[] clientBody, final byte[] prefillAnswer) {
        return policy.adapter().decodeBody(clientBody, prefillAnswer);
    }

    /** The prefill pod answered: the call ended, the decode stage begins at the plan's decode pod. */
    public void prefilled() {
        ended();
        prefillSlot = slot;
        stage = Stage.DECODE;
        stageAttempts = 0;
        slot = plan.slot();
    }

    /**
     * @return the current stage.
     */
    public Stage stage() {
        return stage;
    }

    /**
     * @return the pod of the current (or last) call.
     */
    public int slot() {
        return slot;
    }

    /**
     * @return the pod that answered the prefill stage, or {@link RoutingPlan#NO_POD}.
     */
    public int prefillSlot() {
        return prefillSlot;
    }

    /**
     * @return the current plan (replanned after failures).
     */
    public RoutingPlan plan() {
        return plan;
    }

    /**
     * @return calls made, all stages together.
     */
    public int attempts() {
        return attempts;
    }

    /**
     * @return the failed calls, in order.
     */
    public List<ExecutionException.Attempt> failures() {
        return failures == null ? List.of() : failures;
    }

    /**
     * @return why no call can be made (503), naming every failed call.
     */
    public String noPodMessage() {
        return "no " + stage.label() + " pod available" + (summary == null ? "" : summary);
    }

    /**
     * @return why the request failed after its stage's attempts were spent (502), naming every failed call.
     */
    public String spentMessage() {
        return stage.label() + " failed on " + stageAttempts + " attempt(s)" + (summary == null ? "" : summary);
    }
}
