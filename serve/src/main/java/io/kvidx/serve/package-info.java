/**
 * The one serving layer of kvidx's servers: the daemon's indexer HTTP API, {@code kvidx router} and the coming
 * Gateway API endpoint picker each start a {@link io.kvidx.serve.NettyServer} (event loops, bootstrap, idle
 * strategy) and, for HTTP/1.1, one {@link io.kvidx.serve.HttpPipeline} (codec and size limits, the idle policy,
 * {@link io.kvidx.serve.BodyLimit}, answers in request order by {@link io.kvidx.serve.RequestSequencer}), answer with
 * {@link io.kvidx.serve.Responses} (JSON over jackson-core, Prometheus text, health, one {@link
 * io.kvidx.serve.HttpError} type written in the API's {@link io.kvidx.serve.ErrorShape}) and read bodies with
 * {@link io.kvidx.serve.JsonBodyReader} (the token-id fast path, then jackson-core). Each server's handlers are thin
 * adapters that get their dependencies through their constructors.
 */
package io.kvidx.serve;
