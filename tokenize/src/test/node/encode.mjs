// Reference encoder for kvidx-tokenize's tests: Hugging Face's JavaScript tokenizer (@huggingface/transformers).
// Usage: node encode.mjs TOKENIZER_DIR PROMPTS_JSON  -> prints a JSON array of token-id arrays, one per prompt.
// Only local files are read (remote models are disabled).
import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dir, promptsFile] = process.argv.slice(2);
env.allowRemoteModels = false;
env.localModelPath = dirname(resolve(dir)) + '/';
const tokenizer = await AutoTokenizer.from_pretrained(basename(resolve(dir)));
const prompts = JSON.parse(readFileSync(promptsFile, 'utf8'));
const out = prompts.map((p) => tokenizer.encode(p, { add_special_tokens: true }));
process.stdout.write(JSON.stringify(out));
