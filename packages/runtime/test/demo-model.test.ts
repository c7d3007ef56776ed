// The repository's demo model through the runtime: greedy continuations of the plain and chat prompts equal
// the ids transformers generated (models/demo/reference.json), and prompt logits are within 1e-4.
import * as fs from "node:fs";
import * as path from "node:path";
import { createEvalExecutor } from "@poot/backend-reference";
import { openSafetensors } from "@poot/models";
import { Engine, generateAll } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { REPO_ROOT } from "@poot/testkit";

const DEMO = path.join(REPO_ROOT, "models", "demo");
const HAVE = fs.existsSync(path.join(DEMO, "reference.json"));

interface DemoReference {
  prompt_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
  chat_ids: number[];
  chat_greedy_ids: number[];
}

describe.skipIf(!HAVE)("models/demo through the runtime (skipped when absent)", () => {
  test("plain and chat prompts: greedy ids and text equal transformers'; first-step logits within 1e-4", () => {
    const ref = JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as DemoReference;
    const prompt = openSafetensors(path.join(DEMO, "reference.safetensors")).readF32Sync("prompt_logits");
    const engine = Engine.load(DEMO, { executor: createEvalExecutor(), context: 64, prefillChunk: 8 });
    try {
      const s = engine.openSession();
      const V = engine.config.vocabSize,
        T = ref.prompt_ids.length;
      const first = s.step(ref.prompt_ids);
      const want = prompt.subarray((T - 1) * V, T * V);
      let d = 0,
        m = 0;
      for (let i = 0; i < V; i++) {
        d = Math.max(d, Math.abs(first[i]! - want[i]!));
        m = Math.max(m, Math.abs(want[i]!));
      }
      expect(d / m).toBeLessThanOrEqual(1e-4);
      s.release();
      const plain = generateAll(engine, engine.openSession(), ref.prompt_ids, {
        maxTokens: ref.greedy_ids.length,
        temperature: 0,
        ignoreEos: true,
      });
      expect(plain.ids).toEqual(ref.greedy_ids);
      expect(plain.text).toBe(ref.greedy_text);
      const chat = generateAll(engine, engine.openSession(), ref.chat_ids, {
        maxTokens: ref.chat_greedy_ids.length,
        temperature: 0,
      });
      expect(chat.ids).toEqual(ref.chat_greedy_ids.slice(0, chat.ids.length));
      expect(chat.ids.length === ref.chat_greedy_ids.length || chat.finishReason === "eos").toBe(true);
    } finally {
      engine.close();
    }
  });
});
