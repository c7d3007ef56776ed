// The traced forward of the self-made family fixtures (test/fixtures/families, made by scripts/make-family-fixtures.py
// with transformers 5.17 in float64): Mistral, Qwen2, Gemma 2, Phi-3, Mixtral, Qwen3-MoE.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { LoadedModel, openSafetensors } from "@poot/models";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "families");
const FAMILIES = ["mistral", "qwen2", "gemma2", "phi3", "mixtral", "qwen3moe"];

function relErr(a: ArrayLike<number>, ref: ArrayLike<number>): number {
  expect(a.length).toBe(ref.length);
  let d = 0, m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return d / m;
}

describe("self-made family fixtures", () => {
  for (const fam of FAMILIES) {
    test(`${fam}: prompt logits, greedy ids with the KV cache, prompt+greedy logits`, () => {
      const dir = path.join(ROOT, fam);
      const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[]; greedy_ids: number[] };
      const refs = openSafetensors(path.join(dir, "reference.safetensors"));
      const m = LoadedModel.open(dir);
      expect(m.config.architecture).toBe(fam);
      const rel = relErr(m.logits(ref.prompt_ids), refs.readF32Sync("prompt_logits"));
      const gen = m.generate(ref.prompt_ids, ref.greedy_ids.length);
      const full = relErr(m.logits([...ref.prompt_ids, ...ref.greedy_ids]), refs.readF32Sync("full_logits"));
      console.log(`${fam}: prompt rel ${rel.toExponential(2)}, full rel ${full.toExponential(2)}, greedy ${JSON.stringify(gen.ids)}`);
      expect(rel).toBeLessThanOrEqual(1e-4);
      expect(gen.ids).toEqual(ref.greedy_ids);
      expect(full).toBeLessThanOrEqual(1e-4);
      m.close();
      refs.close();
    });
  }
});
