// The traced forward of the issue #26 families (fixtures/hf/<family>, made by tools/make-fixtures/make_families.py
// with transformers 5.17) against transformers' float64 logits: Granite, SmolLM3, Phi-4 (Phi3ForCausalLM), gpt-oss
// and DeepSeek-V2 (MLA). Prompt logits with f32 and bf16 weights, greedy ids through the KV-cache decode graph, every
// decode step's logits, and prompt+greedy logits in one pass.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { LoadedModel, openSafetensors } from "@poot/models";

function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "pnpm-workspace.yaml"))) dir = path.dirname(dir);
  return dir;
}

const ROOT = path.join(repoRoot(), "fixtures", "hf");
/** Family folder -> the architecture it parses to. */
export const NEW_FAMILIES = { granite: "granite", smollm3: "smollm3", phi4: "phi3", gptoss: "gptoss", deepseek2: "deepseek2" } as const;

/** max |a - ref| / max |ref|. */
function relErr(a: ArrayLike<number>, ref: ArrayLike<number>): number {
  expect(a.length).toBe(ref.length);
  let d = 0, m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return d / m;
}

describe("issue #26 families against transformers' float64 logits", () => {
  for (const [fam, arch] of Object.entries(NEW_FAMILIES)) {
    describe(fam, () => {
      const dir = path.join(ROOT, fam);
      const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[]; greedy_ids: number[] };
      const refs = openSafetensors(path.join(dir, "reference.safetensors"));
      const promptLogits = refs.readF32Sync("prompt_logits"), fullLogits = refs.readF32Sync("full_logits");

      test.each(["f32", "bf16"] as const)("prompt logits (%s weights) within 1e-4", (weights) => {
        const m = LoadedModel.open(dir, { weights });
        expect(m.config.architecture).toBe(arch);
        const rel = relErr(m.logits(ref.prompt_ids), promptLogits);
        console.log(`${fam} ${weights} prompt rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        m.close();
      });

      test("greedy decode with the KV cache reproduces greedy_ids; every step and prompt+greedy logits match", () => {
        const m = LoadedModel.open(dir);
        const gen = m.generate(ref.prompt_ids, ref.greedy_ids.length);
        expect(gen.ids).toEqual(ref.greedy_ids);
        const V = m.config.vocabSize, T = ref.prompt_ids.length;
        gen.logits.forEach((row, n) => expect(relErr(row, fullLogits.subarray((T - 1 + n) * V, (T + n) * V))).toBeLessThanOrEqual(1e-4));
        const rel = relErr(m.logits([...ref.prompt_ids, ...ref.greedy_ids]), fullLogits);
        console.log(`${fam} full rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        m.close();
      });
    });
  }
});
