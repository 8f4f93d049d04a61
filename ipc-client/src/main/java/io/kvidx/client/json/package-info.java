/**
 * kvidx's one JSON reader and writer ({@link io.kvidx.client.json.MiniJson}), JDK only, for control-plane documents
 * and requests: LMCache's answers, engine responses, chat-completion bodies and tokenizer configurations, traces.
 */
package io.kvidx.client.json;
