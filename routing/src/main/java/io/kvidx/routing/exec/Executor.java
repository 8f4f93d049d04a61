package io.kvidx.routing.exec;

import io.kvidx.routing.RoutingContext;

import java.io.OutputStream;

/**
 * Carries out a {@link io.kvidx.routing.RoutingPlan}: sends the request to the picked pod (or to the prefill
 * pod, then the decode pod) and streams the answer to the caller.
 *
 * <p><b>Note:</b> implementations are thread safe; each call uses the calling thread's context.
 */
public interface Executor {
    /**
     * The outcome of a request that was served.
     *
     * @param status      HTTP status of the streamed answer.
     * @param slot        pod that produced the answer (decode pod for prefill/decode).
     * @param prefillSlot prefill pod, or -1.
     * @param attempts    attempts made (1 when nothing failed).
     * @param bytes       bytes streamed to the sink.
     */
    record Outcome(int status, int slot, int prefillSlot, int attempts, long bytes) {
    }

    /**
     * Executes the plan already in the context ({@code ctx.plan()}), replanning through the router's workflow when
     * a pod fails before any byte reached the sink.
     *
     * @param ctx     the context the plan was made in.
     * @param request the request.
     * @param sink    where the answer's body is streamed (flushed per chunk; not closed).
     * @return what happened.
     * @throws ExecutionException   when no pod could serve the request.
     * @throws InterruptedException when interrupted.
     */
    Outcome execute(RoutingContext ctx, ProxyRequest request, OutputStream sink)
        throws ExecutionException, InterruptedException;
}
