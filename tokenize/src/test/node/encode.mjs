// Reference for kvidx-tokenize's tests: Hugging Face's JavaScript tokenizer and chat templates
// (@huggingface/transformers, which renders templates with @huggingface/jinja).
// Usage: node encode.mjs TOKENIZER_DIR INPUT_JSON
//   INPUT_JSON an array of prompts      -> prints a JSON array of token-id arrays, one per prompt
//                                          (tokenizer.encode(prompt, {add_special_tokens: true})).
//   INPUT_JSON {"prompts": [...], "chats": [{messages, tools, add_generation_prompt, kwargs}, ...]}
//                                       -> prints {"prompts": [ids...], "chats": [{"text", "ids"} or {"error"}]}:
//      text = tokenizer.apply_chat_template(messages, {tools, add_generation_prompt, tokenize: false, ...kwargs}),
//      ids  = tokenizer.encode(text, {add_special_tokens: false}), as apply_chat_template(tokenize: true) does.
// Only local files are read (remote models are disabled).
import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dir, inputFile] = process.argv.slice(2);
env.allowRemoteModels = false;
env.localModelPath = dirname(resolve(dir)) + '/';
const tokenizer = await AutoTokenizer.from_pretrained(basename(resolve(dir)));
const input = JSON.parse(readFileSync(inputFile, 'utf8'));
const encode = (p) => tokenizer.encode(p, { add_special_tokens: true });
if (Array.isArray(input)) {
    process.stdout.write(JSON.stringify(input.map(encode)));
} else {
    const chats = (input.chats ?? []).map((c) => {
        try {
            const text = tokenizer.apply_chat_template(c.messages, {
                ...(c.kwargs ?? {}),
                tools: c.tools ?? null,
                add_generation_prompt: c.add_generation_prompt,
                tokenize: false,
            });
            return { text, ids: tokenizer.encode(text, { add_special_tokens: false }) };
        } catch (e) {
            return { error: String(e?.message ?? e) };
        }
    });
    process.stdout.write(JSON.stringify({ prompts: (input.prompts ?? []).map(encode), chats }));
}
