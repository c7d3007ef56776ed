// `--activations fp8-static` (decision 2610) through the CLI on fixtures/hf/llama3-fp8-static: `poot logits` on eval
// and with --compiled (the compiled graph for cpu) against the float64 forward that quantizes each linear's input with
// its input_scale (ml_dtypes' e4m3; tools/hf-quant/make_fp8_static.py); the default keeps activations f32 (the
// exact-activation reference); `poot compile --activations fp8-static` reports what the quantization costs in
// dispatches; a bad value or a checkpoint without static scales is one line naming what is wrong.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { poot } from "./run-poot.js";
import { openSafetensors } from "@poot/models";
import { fixture, relErr } from "@poot/testkit";
import { describe, expect, test } from "vitest";

const dir = fixture("hf", "llama3-fp8-static");
const ids = (JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[] })
  .prompt_ids;
const reference = (name: string) => openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync(name);

/** `poot logits` of llama3-fp8-static's prompt. */
async function logits(...extra: string[]): Promise<Float32Array> {
  return logitsOf(dir, ids, ...extra);
}
async function logitsOf(model: string, prompt: readonly number[], ...extra: string[]): Promise<Float32Array> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-fp8-"));
  try {
    const file = path.join(tmp, "l.bin");
    const r = await poot("logits", model, "--ids", prompt.join(","), "--out", file, ...extra);
    expect(r.code, r.err).toBe(0);
    const b = fs.readFileSync(file);
    return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

describe("poot --activations on an FP8 W8A8-static checkpoint", () => {
  test("logits: fp8-static (eval and compiled for cpu) match the static forward; the default the exact one", async () => {
    const statics = reference("static_prompt_logits"),
      exact = reference("prompt_logits");
    for (const extra of [[], ["--compiled", "--target", "cpu"]]) {
      const got = await logits("--activations", "fp8-static", ...extra);
      const e = relErr(got, statics);
      console.log(`poot logits --activations fp8-static ${extra.join(" ")}: rel ${e.toExponential(2)}`);
      expect(e).toBeLessThanOrEqual(1e-4);
      // Planted: the same logits against the exact-activation reference fail the bound.
      expect(relErr(got, exact)).toBeGreaterThan(1e-2);
    }
    expect(relErr(await logits(), exact)).toBeLessThanOrEqual(1e-4);
  }, 120_000);

  test("logits --activations fp8-dynamic on llama3-fp8 (dynamic scheme) match the per-group dynamic forward", async () => {
    const fp8 = fixture("hf", "llama3-fp8");
    const ref = JSON.parse(fs.readFileSync(path.join(fp8, "reference-dynamic.json"), "utf8")) as {
      prompt_ids: number[];
    };
    const want = openSafetensors(path.join(fp8, "reference-dynamic.safetensors")).readF32Sync("dynamic_prompt_logits");
    expect(relErr(await logitsOf(fp8, ref.prompt_ids, "--activations", "fp8-dynamic"), want)).toBeLessThanOrEqual(1e-4);
  }, 120_000);

  test("compile: the quantization of the inputs costs dispatches only where no producer absorbs it", async () => {
    const count = async (a: string) => {
      const r = await poot("compile", dir, "--target", "cpu", "--context", "64", "--activations", a, "--json");
      expect(r.code, r.err).toBe(0);
      return JSON.parse(r.out) as { fusedDispatches: number; dispatchesPerLayer: Record<string, number> };
    };
    const [f32, fp8] = [await count("f32"), await count("fp8-static")];
    console.log(
      `cpu decode dispatches per layer: f32 ${JSON.stringify(f32.dispatchesPerLayer)}, fp8-static ${JSON.stringify(fp8.dispatchesPerLayer)}`,
    );
    // Four quantized inputs a layer (q/k/v share one, gate/up one): all but the attention output's fuse into their
    // producer (the norm rows, the SwiGLU product), so a layer costs one dispatch more, not four.
    for (const [layer, n] of Object.entries(f32.dispatchesPerLayer)) expect(fp8.dispatchesPerLayer[layer]).toBe(n + 1);
  }, 120_000);

  test("bad --activations values and checkpoints without static scales are one line naming the problem", async () => {
    const bad = await poot("logits", dir, "--ids", "1,2", "--activations", "fp8");
    expect(bad.code).not.toBe(0);
    expect(bad.err.trim().split("\n")).toHaveLength(1);
    expect(bad.err).toMatch(/--activations must be f32, fp8-static or fp8-dynamic, got "fp8"/);
    const none = await poot("logits", fixture("hf", "llama3-fp8"), "--ids", "1,2", "--activations", "fp8-static");
    expect(none.code).not.toBe(0);
    expect(none.err.trim().split("\n")).toHaveLength(1);
    expect(none.err).toMatch(/input_scale/);
    // A GGUF has no FP8 checkpoint: refused, not silently run with f32 activations.
    const gguf = path.join(fixture("gguf", "llama3"), "model-Q4_K_M.gguf");
    for (const argv of [
      ["logits", gguf, "--ids", "1,2"],
      ["run", gguf, "-p", "hi", "-n", "1", "--backend", "cpu"],
    ]) {
      const r = await poot(...argv, "--activations", "fp8-dynamic");
      expect(r.code).not.toBe(0);
      expect(r.err).toBe(
        `poot: activations fp8-dynamic need an FP8 Hugging Face checkpoint; a GGUF file has none (file ${gguf}, key activations)\n`,
      );
    }
  });
});
