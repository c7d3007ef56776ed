// Decision 1690: a GGUF `llama` checkpoint's Q/K weights stay in llama.cpp's stored (pair-interleaved) order and RoPE
// rotates adjacent pairs; nothing gathers their rows. Oracle: llama.cpp's own F32 logits of the fixture file. Planted:
// rotate-half RoPE over the stored order (what forgetting the order would do) must miss them by far.
import * as fs from "node:fs";
import { describe, expect, test } from "vitest";
import { LoadedModel, configFromGGUF, openCheckpoint, openGGUF, readHFConfig } from "@poot/models";
import type { ModelConfig } from "@poot/models";
import type { Graph } from "@poot/graph-ir";
import { fixture, needFixture, relErr } from "@poot/testkit";

const NO_FIXTURES = needFixture("gguf", "hf");

function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** Gathers of a weight's rows (axis 0 of a Const), the bind-time copies 1690 removes. */
function weightRowGathers(g: Graph): number {
  return g.eqns.filter(
    (e) => e.op === "Gather" && typeof e.inputs[0] === "number" && g.values[e.inputs[0]]!.storage.kind === "const",
  ).length;
}

/** Concat-under-Reshape rotations (graph-ir's ropeInterleaved) in a traced graph. */
function interleavedRopes(g: Graph): number {
  const def = new Map(g.eqns.map((e) => [e.out, e]));
  return g.eqns
    .filter(
      (e) =>
        e.op === "Reshape" &&
        typeof e.inputs[0] === "number" &&
        def.get(e.inputs[0])?.op === "Concat" &&
        e.params.shape !== undefined,
    )
    .filter((e) => {
      const c = def.get(e.inputs[0] as number)!;
      const src = g.values[c.out]!.shape;
      return src[src.length - 1] === 2;
    }).length;
}

describe.skipIf(NO_FIXTURES !== undefined)(`GGUF llama RoPE order (${NO_FIXTURES ?? "present"})`, () => {
  const ids = () =>
    (JSON.parse(fs.readFileSync(fixture("gguf", "llama3", "reference-F32.json"), "utf8")) as { prompt_ids: number[] })
      .prompt_ids;

  test("llama3 GGUF: no Q/K row gathers, interleaved RoPE on q and k of every layer; qwen3 GGUF keeps rotate-half", () => {
    const llama = LoadedModel.open(fixture("gguf", "llama3", "model-Q8_0.gguf"));
    const qwen = LoadedModel.open(fixture("gguf", "qwen3", "model-Q8_0.gguf"));
    try {
      const g = llama.graph({ kind: "decode", context: 16 });
      // The embedding's row gather of the token ids is the only one (the table is a weight too).
      expect(weightRowGathers(g)).toBe(1);
      expect(interleavedRopes(g)).toBe(2 * llama.config.numLayers);
      const gq = qwen.graph({ kind: "decode", context: 16 });
      expect(interleavedRopes(gq)).toBe(0);
      expect(weightRowGathers(gq)).toBe(1);
    } finally {
      llama.close();
      qwen.close();
    }
  });

  test("a partial rotary head (half the dims) keeps the row gather: the GGUF gives the HF folder's logits", () => {
    // Partial rotary dims, and no llama3 frequency scaling (its rope_freqs has one entry per full-head frequency).
    const partial = (c: ModelConfig): ModelConfig => ({
      ...c,
      rope: { ...c.rope, rotaryDim: c.headDim / 2, scaling: null },
      ropeFreqsTensor: null,
    });
    const g = openGGUF(fixture("gguf", "llama3", "model-F32.gguf"));
    const gguf = LoadedModel.fromCheckpoint(partial(configFromGGUF(g)), g);
    const hf = LoadedModel.fromCheckpoint(
      partial(readHFConfig(fixture("hf", "llama3"))),
      openCheckpoint(fixture("hf", "llama3")),
    );
    try {
      // The fallback: Q/K rows gathered back into HF order (2 per layer) besides the embedding's gather.
      expect(weightRowGathers(gguf.graph({ kind: "decode", context: 16 }))).toBe(1 + 2 * gguf.config.numLayers);
      const full = LoadedModel.open(fixture("hf", "llama3"));
      const rel = relErr(gguf.logits(ids()), hf.logits(ids())),
        moved = relErr(hf.logits(ids()), full.logits(ids()));
      full.close();
      console.log(
        `llama3 rotaryDim Dh/2: GGUF vs HF rel ${rel.toExponential(2)} (vs full rotary ${moved.toExponential(2)})`,
      );
      expect(rel).toBeLessThanOrEqual(1e-5);
      expect(moved).toBeGreaterThan(1e-3); // the partial config really changed the model
    } finally {
      gguf.close();
      hf.close();
    }
  });

  test("planted: rotate-half over the stored order misses llama.cpp's F32 logits; the stored-order pairs match them", () => {
    const file = fixture("gguf", "llama3", "model-F32.gguf");
    const want = readF32(fixture("gguf", "llama3", "logits-F32.bin"));
    const right = LoadedModel.open(file);
    const g = openGGUF(file);
    // Not `llama` to the tracer: no gather and rotate-half pairs, over rows stored pair-interleaved.
    const wrong = LoadedModel.fromCheckpoint({ ...configFromGGUF(g), sourceArchitecture: "llama-planted" }, g);
    try {
      const ok = relErr(right.logits(ids()), want),
        bad = relErr(wrong.logits(ids()), want);
      console.log(
        `llama3 F32 vs llama.cpp: stored-order pairs ${ok.toExponential(2)}, planted rotate-half ${bad.toExponential(2)}`,
      );
      expect(ok).toBeLessThanOrEqual(1e-5);
      expect(bad).toBeGreaterThan(1e-2);
    } finally {
      right.close();
      wrong.close();
    }
  });
});
