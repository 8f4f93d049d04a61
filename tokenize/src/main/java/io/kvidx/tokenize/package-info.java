/**
 * Prepare from text: a request's prompt, or its chat rendered with the model's chat template (jinjava, with Hugging
 * Face's template helpers), to token ids with the model's Hugging Face tokenizer (DJL's binding of the Rust
 * tokenizers library). Optional: routers that route by token ids or keys need neither this module nor DJL.
 */
package io.kvidx.tokenize;
