// Dequant GEMV generated from packed-format descriptors (Q8_0, Q4_0, Q4_1, Q5_0 and a made-up format using the
// whole recipe language) in the interpreter, against graph-ir's DecodePacked + MatMul evaluated in float64.

import type { PackedFormat } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { cpuSynthCaps, synthesizeDequantGemv } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { Q4_0, Q4_1, Q5_0, Q8_0, TEST_MIX, expectDequantGemv, randomBlocks, randomMixBlocks } from "./formats.js";
import { randF32, rng } from "./helpers.js";

const SG: SynthCaps = { maxWorkgroup: 128, sharedBytes: 16384, subgroupSize: 8 };
const TREE: SynthCaps = { maxWorkgroup: 64, sharedBytes: 4096 };
const CPU: SynthCaps = cpuSynthCaps();
// The CUDA caps: a block split over lanes of 8 elements, 1, 2 or 4 tasks a trip (decision 0806).
const VEC: SynthCaps = { maxWorkgroup: 128, sharedBytes: 16384, subgroupSize: 32, vectorLoads: true };

function check(f: PackedFormat, B: number, blocksPerRow: number, N: number, caps: SynthCaps, seed: number) {
  const r = rng(seed);
  const K = blocksPerRow * f.blockSize;
  const bytes = f === TEST_MIX ? randomMixBlocks(r, N * blocksPerRow) : randomBlocks(r, f, N * blocksPerRow);
  const x = randF32(r, B * K);
  const s = synthesizeDequantGemv({ name: `dq_${f.name}`, K, N, batch: B, format: f }, caps);
  expectDequantGemv(s, f, B, K, N, bytes, x);
  return s;
}

describe("dequant GEMV from format descriptors", () => {
  const formats = [Q8_0, Q4_0, Q4_1, Q5_0, TEST_MIX];
  for (const f of formats) {
    for (const [B, nb, N, caps] of [
      [1, 1, 1, TREE],
      [1, 3, 7, SG],
      [3, 5, 33, TREE],
      [2, 9, 4, SG],
      [11, 2, 5, SG],
      [1, 3, 9, CPU],
      [3, 2, 17, CPU],
      [10, 1, 3, CPU],
      [1, 3, 7, VEC],
      [2, 9, 4, VEC],
      [1, 16, 5, VEC],
      [3, 32, 3, VEC],
      [10, 8, 2, VEC],
    ] as const) {
      it(`${f.name}: ${B > 8 ? "GEMM, " : ""}batch ${B}, ${nb} blocks per row, N=${N} (${caps === CPU ? "cpu: serial threads" : caps === VEC ? "cuda: lanes split blocks" : caps.subgroupSize === undefined ? "tree" : "subgroups"})`, () => {
        check(f, B, nb, N, caps, nb * 131 + N * 7 + B + f.bytesPerBlock);
      });
    }
  }

  it("hoists per-block values out of the element loop (the Q4_0 scale is loaded once per block)", () => {
    const s = synthesizeDequantGemv({ name: "dq", K: 64, N: 2, format: Q4_0 }, TREE);
    const text = JSON.stringify(s.kernel.body);
    // Find the inner element loop (`for i`): the f16 scale unpack must be outside it, and appear once in all.
    const loops: unknown[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === "object") {
        if ((v as { s?: string; var?: string }).s === "for" && (v as { var: string }).var === "i") loops.push(v);
        Object.values(v).forEach(walk);
      }
    };
    walk(s.kernel.body);
    expect(loops).toHaveLength(1);
    expect(JSON.stringify(loops[0])).not.toContain('"fmt":"f16"');
    // ...while the per-element nibble extraction (a shift) is inside it.
    expect(JSON.stringify(loops[0])).toContain('"op":"shr"');
    expect(text.match(/"fmt":"f16"/g)?.length).toBe(1);
  });

  it("rejects K that is not a multiple of the block size and malformed recipes", () => {
    expect(() => synthesizeDequantGemv({ name: "dq", K: 40, N: 2, format: Q8_0 }, TREE)).toThrow(
      expect.objectContaining({ code: "bad_shape" }),
    );
    expect(() =>
      synthesizeDequantGemv(
        { name: "dq", K: 32, N: 2, format: { ...Q8_0, name: "bad", decode: { op: "var", name: "nope" } } },
        TREE,
      ),
    ).toThrow(expect.objectContaining({ code: "bad_format" }));
  });
});
