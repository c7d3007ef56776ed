// The traced forward of the self-made family fixtures (test/fixtures/families, made by scripts/make-family-fixtures.py
// with transformers 5.17 in float64): Mistral, Qwen2, Gemma 2, Phi-3, Mixtral, Qwen3-MoE.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import * as os from "node:os";
import { LoadedModel, openSafetensors } from "@poot/models";
import { hfToGGUF } from "./hf-to-gguf.js";
import { relErr } from "@poot/testkit";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "families");
const FAMILIES = ["mistral", "qwen2", "gemma2", "gemma3-mixed", "phi3", "mixtral", "qwen3moe"];

describe("self-made family fixtures", () => {
  for (const fam of FAMILIES) {
    test(`${fam}: prompt logits, greedy ids with the KV cache, prompt+greedy logits`, () => {
      const dir = path.join(ROOT, fam);
      const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      };
      const refs = openSafetensors(path.join(dir, "reference.safetensors"));
      const m = LoadedModel.open(dir);
      expect(m.config.architecture).toBe(fam.replace(/-.*/, ""));
      const rel = relErr(m.logits(ref.prompt_ids), refs.readF32Sync("prompt_logits"));
      const gen = m.generate(ref.prompt_ids, ref.greedy_ids.length);
      const full = relErr(m.logits([...ref.prompt_ids, ...ref.greedy_ids]), refs.readF32Sync("full_logits"));
      console.log(
        `${fam}: prompt rel ${rel.toExponential(2)}, full rel ${full.toExponential(2)}, greedy ${JSON.stringify(gen.ids)}`,
      );
      expect(rel).toBeLessThanOrEqual(1e-4);
      expect(gen.ids).toEqual(ref.greedy_ids);
      expect(full).toBeLessThanOrEqual(1e-4);
      m.close();
      refs.close();
    });
  }
});

describe("Phi-3 LongRoPE (original context 16, max 64)", () => {
  test("short factors up to 16 tokens, long ones past it, cos/sin scaled by sqrt(1 + ln 4 / ln 16)", () => {
    const dir = path.join(ROOT, "phi3-longrope");
    const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
      prompt_ids: number[];
      greedy_ids: number[];
    };
    const refs = openSafetensors(path.join(dir, "reference.safetensors"));
    const full = refs.readF32Sync("full_logits");
    const m = LoadedModel.open(dir);
    const V = m.config.vocabSize,
      T = ref.prompt_ids.length;
    // The 12-token prompt runs on the short factors; the 20-token one-pass forward on the long ones.
    expect(relErr(m.logits(ref.prompt_ids), refs.readF32Sync("prompt_logits"))).toBeLessThanOrEqual(1e-4);
    expect(relErr(m.logits([...ref.prompt_ids, ...ref.greedy_ids]), full)).toBeLessThanOrEqual(1e-4);
    // Greedy agrees while the sequence fits the original context. At 17 tokens generate re-prefills with the long
    // factors, so that step's logits are the one-pass row 16. (transformers' generate handles the switch differently:
    // its ids from there on match neither a short-cache continuation nor a long re-prefill, so they are not a reference.)
    const gen = m.generate(ref.prompt_ids, 6);
    expect(gen.ids.slice(0, 5)).toEqual(ref.greedy_ids.slice(0, 5));
    expect(relErr(gen.logits[5]!, full.subarray((T + 4) * V, (T + 5) * V))).toBeLessThanOrEqual(1e-4);
    m.close();
    refs.close();
  });
});

describe("self-made families through GGUF (llama.cpp tensor names and metadata, F32)", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-gguf-"));
  // Mistral is left out: llama.cpp's llama architecture has no sliding window.
  for (const fam of ["qwen2", "gemma2", "phi3", "mixtral", "qwen3moe"]) {
    test(`${fam}: the GGUF conversion gives the HF logits`, () => {
      const dir = path.join(ROOT, fam);
      const file = path.join(tmp, `${fam}.gguf`);
      hfToGGUF(dir, file);
      const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[] };
      const refs = openSafetensors(path.join(dir, "reference.safetensors"));
      const m = LoadedModel.open(file);
      expect(m.config.source).toBe("gguf");
      const rel = relErr(m.logits(ref.prompt_ids), refs.readF32Sync("prompt_logits"));
      console.log(`${fam} GGUF: prompt rel ${rel.toExponential(2)}`);
      expect(rel).toBeLessThanOrEqual(1e-4);
      m.close();
      refs.close();
    });
  }
});
