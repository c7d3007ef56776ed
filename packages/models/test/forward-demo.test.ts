// The repo's trained demo model (models/demo) through poot's traced forward against transformers' float64
// forward of the exported folder (reference.safetensors, made on the GPU machine when the model was trained).
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { LoadedModel, Tokenizer, openSafetensors } from "@poot/models";
import { relErr } from "@poot/testkit";

const DEMO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../models/demo");

interface DemoReference {
  prompt: string;
  prompt_ids: number[];
  greedy_ids: number[];
  chat_messages: { role: string; content: string }[];
  chat_text: string;
  chat_ids: number[];
}

const ref = JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as DemoReference;
const refs = openSafetensors(path.join(DEMO, "reference.safetensors"));

test("demo model: prompt and chat logits within 1e-4 of transformers; greedy ids equal", () => {
  const m = LoadedModel.open(DEMO);
  const prompt = relErr(m.logits(ref.prompt_ids), refs.readF32Sync("prompt_logits"));
  const chat = relErr(m.logits(ref.chat_ids), refs.readF32Sync("chat_logits"));
  console.log(`demo prompt rel ${prompt.toExponential(2)}, chat rel ${chat.toExponential(2)}`);
  expect(prompt).toBeLessThanOrEqual(1e-4);
  expect(chat).toBeLessThanOrEqual(1e-4);
  expect(m.generate(ref.prompt_ids, ref.greedy_ids.length).ids).toEqual(ref.greedy_ids);
  m.close();
}, 120_000);

test("demo tokenizer and chat template reproduce the Python side's ids", () => {
  const tok = Tokenizer.fromFolder(DEMO);
  expect(tok.encode(ref.prompt, { addSpecial: true })).toEqual(ref.prompt_ids);
  const text = tok.applyChatTemplate(ref.chat_messages, { addGenerationPrompt: true });
  expect(text).toBe(ref.chat_text);
  expect(tok.encode(text)).toEqual(ref.chat_ids);
});
