// `--backend wgpu` / `--backend vulkan` on the packed formats of issue #26: the GGUF files llama.cpp's own quantizer
// wrote (fixtures/gguf/formats, against llama.cpp's F32 forward of ggml's dequantization) and the GPTQ / AWQ / FP8
// safetensors of fixtures/hf/llama3-* (against the float64 forward of their dequantization). Weights stay packed and
// decode in kernelgen's kernels; prompt logits within 1e-3 (GPU tolerance of the issue), 16 greedy ids equal.
import * as fs from "node:fs";
import * as path from "node:path";
import { LoadedModel, openSafetensors, type OpenModelOptions } from "@poot/models";
import { Engine } from "@poot/runtime";
import { fixture, relErr, argmax } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { createExecutor } from "../src/commands/backends.js";
import { loadReason, skipReason } from "./gpu-fixtures.js";

interface Case {
  /** Test name. */
  readonly name: string;
  /** Model path (GGUF file or HF folder). */
  readonly model: string;
  readonly promptIds: readonly number[];
  readonly greedyIds: readonly number[];
  /** Reference prompt logits [T, V]. */
  readonly logits: () => Float32Array;
  /** How the model is opened (fp8-static activations, decision 2610). */
  readonly open?: OpenModelOptions;
}

function cases(): Case[] {
  const dir = fixture("gguf", "formats");
  const out: Case[] = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((file) => {
      const stem = file.slice(0, -".json".length);
      const fx = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as {
        gguf: string;
        prompt_ids: number[];
        reference_greedy_ids: number[];
      };
      return {
        name: stem,
        model: path.join(dir, fx.gguf),
        promptIds: fx.prompt_ids,
        greedyIds: fx.reference_greedy_ids,
        logits: () => {
          const b = fs.readFileSync(path.join(dir, `${stem}.ref.bin`));
          return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
        },
      };
    });
  for (const d of ["llama3-gptq", "llama3-awq", "llama3-fp8"]) {
    const ref = JSON.parse(fs.readFileSync(fixture("hf", d, "reference.json"), "utf8")) as {
      prompt_ids: number[];
      greedy_ids: number[];
    };
    out.push({
      name: d,
      model: fixture("hf", d),
      promptIds: ref.prompt_ids,
      greedyIds: ref.greedy_ids,
      logits: () => openSafetensors(fixture("hf", d, "reference.safetensors")).readF32Sync("prompt_logits"),
    });
  }
  // FP8 static activation scales applied (against the float64 forward that quantizes each linear's input with them).
  const st = JSON.parse(fs.readFileSync(fixture("hf", "llama3-fp8-static", "reference.json"), "utf8")) as {
    prompt_ids: number[];
    static_greedy_ids: number[];
  };
  out.push({
    name: "llama3-fp8-static (activations fp8-static)",
    model: fixture("hf", "llama3-fp8-static"),
    promptIds: st.prompt_ids,
    greedyIds: st.static_greedy_ids,
    logits: () =>
      openSafetensors(fixture("hf", "llama3-fp8-static", "reference.safetensors")).readF32Sync("static_prompt_logits"),
    open: { activations: "fp8-static" },
  });
  // transformers' dynamic FP8 activations (a scale per 64-input group) on the fine-grained FP8 checkpoint.
  const dyn = JSON.parse(fs.readFileSync(fixture("hf", "llama3-fp8", "reference-dynamic.json"), "utf8")) as {
    prompt_ids: number[];
    dynamic_greedy_ids: number[];
  };
  out.push({
    name: "llama3-fp8 (activations fp8-dynamic)",
    model: fixture("hf", "llama3-fp8"),
    promptIds: dyn.prompt_ids,
    greedyIds: dyn.dynamic_greedy_ids,
    logits: () =>
      openSafetensors(fixture("hf", "llama3-fp8", "reference-dynamic.safetensors")).readF32Sync(
        "dynamic_prompt_logits",
      ),
    open: { activations: "fp8-dynamic" },
  });
  return out;
}

/** Registers the packed-format checks of one GPU backend. */
export async function formatSuite(backend: "wgpu" | "vulkan"): Promise<void> {
  const skip = (await skipReason(backend)) ?? (await loadReason(backend));
  describe.skipIf(skip !== undefined)(
    `poot --backend ${backend} on the issue #26 packed formats${skip !== undefined ? ` (skipped: ${skip})` : ""}`,
    () => {
      for (const c of cases()) {
        test(`${c.name}: prompt logits within 1e-3 of the float forward of the stored weights, greedy ids equal`, () => {
          const expected = c.logits();
          const executor = createExecutor(backend, "test");
          const engine = new Engine(LoadedModel.open(c.model, c.open), { executor, context: 40, tokenizer: null });
          try {
            const V = engine.config.vocabSize,
              T = c.promptIds.length;
            const s = engine.openSession();
            let worst = 0;
            let logits: Float32Array = new Float32Array(0);
            for (const end of [8, T]) {
              logits = s.step(c.promptIds.slice(s.length, end));
              const err = relErr(logits, expected.subarray((end - 1) * V, end * V));
              worst = Math.max(worst, err);
              expect(err, `position ${end - 1}`).toBeLessThanOrEqual(1e-3);
            }
            const ids: number[] = [];
            for (let g = 0; g < c.greedyIds.length; g++) {
              ids.push(argmax(logits));
              if (g + 1 < c.greedyIds.length) logits = s.step([ids.at(-1)!]);
            }
            expect(ids).toEqual(c.greedyIds);
            s.release();
            console.log(`${backend} ${c.name}: max rel err ${worst.toExponential(2)}`);
          } finally {
            engine.close();
            executor.dispose();
          }
        }, 600_000);
      }
    },
  );
}
