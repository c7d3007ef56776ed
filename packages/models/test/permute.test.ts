// The llama GGUF Q/K row order: un-permuting the GGUF F32 weights gives back the HF weights exactly.
import { describe, expect, test } from "vitest";
import { decodePacked, openGGUF, openSafetensors, readHFConfig, unpermuteLlamaQK } from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf", "hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

describe.skipIf(!FIXTURES)("llama Q/K permutation", () => {
  test("llama3: attn_q/attn_k un-permuted equal q_proj/k_proj; v and qwen3 (not permuted) equal as stored", async () => {
    const c = readHFConfig(fixture("hf", "llama3"));
    const g = openGGUF(fixture("gguf", "llama3", "model-F32.gguf"));
    const s = openSafetensors(fixture("hf", "llama3"));
    for (let l = 0; l < c.numLayers; l++) {
      const q = await g.readF32(`blk.${l}.attn_q.weight`);
      const k = await g.readF32(`blk.${l}.attn_k.weight`);
      const hq = await s.readF32(`model.layers.${l}.self_attn.q_proj.weight`);
      const hk = await s.readF32(`model.layers.${l}.self_attn.k_proj.weight`);
      expect(Array.from(q)).not.toEqual(Array.from(hq));
      expect(Array.from(unpermuteLlamaQK(q, c.numHeads, c.headDim, c.hiddenSize))).toEqual(Array.from(hq));
      expect(Array.from(unpermuteLlamaQK(k, c.numKVHeads, c.headDim, c.hiddenSize))).toEqual(Array.from(hk));
      expect(Array.from(await g.readF32(`blk.${l}.attn_v.weight`))).toEqual(
        Array.from(await s.readF32(`model.layers.${l}.self_attn.v_proj.weight`)),
      );
    }
    const g3 = openGGUF(fixture("gguf", "qwen3", "model-F32.gguf"));
    const s3 = openSafetensors(fixture("hf", "qwen3"));
    expect(Array.from(await g3.readF32("blk.0.attn_q.weight"))).toEqual(
      Array.from(await s3.readF32("model.layers.0.self_attn.q_proj.weight")),
    );
  });
  test("packed rows permute as bytes: Q8_0 decode of un-permuted rows = un-permuted decode", async () => {
    const c = readHFConfig(fixture("hf", "llama3"));
    const g = openGGUF(fixture("gguf", "llama3", "model-Q8_0.gguf"));
    const info = g.info("blk.0.attn_q.weight");
    const raw = await g.read(info.name);
    const rowBytes = (c.hiddenSize / info.format.blockElems) * info.format.blockBytes;
    const a = decodePacked(info.format, unpermuteLlamaQK(raw, c.numHeads, c.headDim, rowBytes));
    const b = unpermuteLlamaQK(await g.readF32(info.name), c.numHeads, c.headDim, c.hiddenSize);
    expect(Array.from(a)).toEqual(Array.from(b));
  });
});
