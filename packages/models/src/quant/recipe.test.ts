// Recipes (decode as data) must equal the reference decoders bit for bit: on random valid blocks of every
// format, and on every block of the fixtures' quantized tensors.
import * as fs from "node:fs";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";
import { openGGUF } from "../gguf.js";
import { QUANT_RECIPES, decodeBlockByRecipe } from "./recipe.js";
import { QUANT_FORMATS } from "./registry.js";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

function bitsEqual(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length),
    y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

describe("recipes equal decodeBlock", () => {
  let seed = 7;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) & 0xff;
  for (const f of Object.values(QUANT_FORMATS)) {
    test(`${f.name}: 200 random blocks`, () => {
      const r = QUANT_RECIPES[f.name];
      expect([r.blockElems, r.blockBytes]).toEqual([f.blockElems, f.blockBytes]);
      for (let t = 0; t < 200; t++) {
        const b = Uint8Array.from({ length: f.blockBytes }, rnd);
        // Finite scales: clear the top exponent bit of every f16/bf16/f32 field's high byte.
        for (const fl of f.fields)
          if (fl.kind === "f16" || fl.kind === "bf16" || fl.kind === "f32")
            for (let k = 0; k < fl.count; k++)
              b[fl.offset + (fl.kind === "f32" ? 4 : 2) * k + (fl.kind === "f32" ? 3 : 1)]! &= 0xbf;
        const a = new Float32Array(f.blockElems),
          c = new Float32Array(f.blockElems);
        f.decodeBlock(b, 0, a, 0);
        decodeBlockByRecipe(r, b, 0, c, 0);
        if (!bitsEqual(a, c))
          throw new Error(`${f.name} block ${t}: ${Array.from(a.slice(0, 8))} vs ${Array.from(c.slice(0, 8))}`);
      }
    });
  }
  test.skipIf(!FIXTURES)(
    "the first 64 blocks of every tensor of two Q4_K_M fixtures (Q4_K, Q6_K, Q5_0, Q8_0, F32)",
    () => {
      for (const file of [
        fixture("gguf", "llama3-w256", "model-Q4_K_M.gguf"),
        fixture("gguf", "llama3", "model-Q4_K_M.gguf"),
      ]) {
        if (!fs.existsSync(file)) continue;
        const g = openGGUF(file);
        for (const t of g.tensors()) {
          const blocks = Math.min(64, t.byteLength / t.format.blockBytes);
          const raw = g.readSync(t.name).subarray(0, blocks * t.format.blockBytes);
          const ref = g.readF32Sync(t.name).subarray(0, blocks * t.format.blockElems);
          const viaRecipe = new Float32Array(ref.length);
          for (let b = 0; b * t.format.blockBytes < raw.length; b++)
            decodeBlockByRecipe(
              QUANT_RECIPES[t.dtype],
              raw,
              b * t.format.blockBytes,
              viaRecipe,
              b * t.format.blockElems,
            );
          expect([t.name, bitsEqual(ref, viaRecipe)]).toEqual([t.name, true]);
        }
      }
    },
  );
});
