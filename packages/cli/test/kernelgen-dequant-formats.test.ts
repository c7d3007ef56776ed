// kernelgen's dequant GEMV / GEMM over every GGML block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K), compiled
// from the descriptors traced graphs carry (models' recipes), in the kernel-dsl interpreter on GPU-shaped and CPU caps,
// against graph-ir's float64 MatMul over weights decoded by models' ggml-port decoders (independent of the recipes).
// Lives here, not in kernelgen, because kernelgen may not depend on @poot/models (DESIGN.md's direction).
import { Builder, bf16BitsToF32, evaluate, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "@poot/graph-ir";
import type { Ref } from "@poot/graph-ir";
import { defaultTarget } from "@poot/graph-plan";
import { cpuSynthCaps, synthCapsFrom, synthesizeDequantGemv } from "@poot/kernelgen";
import type { Epilogue, SynthCaps } from "@poot/kernelgen";
import type { GGMLTypeName } from "@poot/models";
import { describe, expect, it } from "vitest";
import {
  FIXTURES,
  TYPES,
  decodeIndependently,
  descriptor,
  expectClose,
  fixtureRows,
  poisoned,
  randF32,
  randomBlocks,
  rng,
  run,
  toWords,
} from "./packed-formats.js";

type Half = "f32" | "bf16" | "f16";
const CAPS: Record<string, SynthCaps> = {
  // A GPU without subgroups: lane groups reduce through workgroup memory.
  tree: { maxWorkgroup: 64, sharedBytes: 4096 },
  // Subgroups of 4, so a few blocks per row already take the subgroup reduce.
  sg4: { maxWorkgroup: 128, sharedBytes: 16384, subgroupSize: 4 },
  cuda: synthCapsFrom(defaultTarget("cuda").caps as never),
  // The CPU (Wasm) caps: serial threads, the unrolled decoder over a u8 buffer.
  cpu: cpuSynthCaps(),
};

interface Case {
  readonly t: GGMLTypeName;
  readonly B: number;
  readonly N: number;
  readonly caps: string;
  readonly xDtype?: Half;
  readonly outDtype?: Half;
  readonly heads?: number;
}

function toHalf(v: Float32Array, dt: Half): Float32Array | Uint16Array {
  return dt === "f32" ? v : Uint16Array.from(v, dt === "bf16" ? f32ToBf16Bits : f32ToF16Bits);
}
const widen = (a: ArrayLike<number>, dt: Half): number[] =>
  Array.from(a, (v) => (dt === "f32" ? v : dt === "bf16" ? bf16BitsToF32(v) : f16BitsToF32(v)));

// heads = 2: y = acc · acc1 (gate and up sharing x), each accumulation's error carried through the product.
const PRODUCT: Epilogue = {
  inputs: [],
  nodes: [
    { op: "leaf", name: "acc" },
    { op: "leaf", name: "acc1" },
    { op: "binary", fn: "mul", a: 0, b: 1 },
  ],
  node: 2,
};

/**
 * Runs the dequant kernel for `ws` (packed [N, K] weights of `c.t`) and checks it against the oracle: graph-ir's
 * MatMul of x with the independently decoded weights, output rounded to its storage type.
 */
function check(c: Case, K: number, ws: readonly Uint8Array[], seed: number): void {
  const { t, B, N } = c;
  const caps = CAPS[c.caps]!;
  const xDtype = c.xDtype ?? "f32",
    outDtype = c.outDtype ?? "f32",
    heads = ws.length;
  const xs = randF32(rng(seed), B * K);
  const x = toHalf(xs, xDtype);
  const s = synthesizeDequantGemv(
    {
      name: `dq_${t}`,
      K,
      N,
      batch: B,
      format: descriptor(t),
      xDtype,
      outDtype,
      heads,
      ...(heads === 2 ? { epilogue: PRODUCT } : {}),
    },
    caps,
  );
  const y = poisoned(s.kernel, "y", B * N);
  // CPU kernels bind the packed bytes as a u8 buffer, other targets as u32 words.
  const bytesIn = s.kernel.buffers.find((p) => p.name === "W")?.elem === "u8";
  const W = Object.fromEntries(ws.map((w, h) => [h === 0 ? "W" : `W${h}`, bytesIn ? w : toWords(w)]));
  run(s.kernel, {
    grid: [...s.grid],
    buffers: { x, ...W, y },
    ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
  });

  const g = new Builder();
  const xr = xDtype === "f32" ? g.const("x", "f32", [B, K]) : g.f32(g.const("x", xDtype, [B, K]));
  const accs = ws.map((_, h) => {
    const wt = g.transpose(g.const(`w${h}`, "f32", [N, K]), [1, 0]);
    return { y: g.matmul(xr, wt), s: g.matmul(g.unary("Abs", xr), g.unary("Abs", wt)) };
  });
  let out: Ref = accs.length === 2 ? g.mul(accs[0]!.y, accs[1]!.y) : accs[0]!.y;
  if (outDtype !== "f32") out = g.f32(g.cast(out, outDtype));
  g.output("y", out);
  accs.forEach((a, h) => {
    g.output(`y${h}`, a.y);
    g.output(`s${h}`, a.s);
  });
  const consts = Object.fromEntries([["x", x], ...ws.map((w, h) => [`w${h}`, decodeIndependently(t, w)])]);
  const o = evaluate(g.build(), { consts }).outputs;
  const want = o.y!.data;
  // f32 accumulation error: 1e-5 of Σ|x·w| per accumulator (through the product for two), plus one ulp of the storage type.
  const acc =
    heads === 1
      ? Array.from(o.s0!.data)
      : Array.from(o.s0!.data, (s0, i) => s0 * Math.abs(o.y1!.data[i]!) + Math.abs(o.y0!.data[i]!) * o.s1!.data[i]!);
  const ulp = outDtype === "bf16" ? 2 ** -7 : outDtype === "f16" ? 2 ** -10 : 0;
  expectClose(
    widen(y as ArrayLike<number>, outDtype),
    want,
    acc.map((a, i) => a + (ulp * Math.abs(want[i]!)) / 1e-5 + (outDtype === "f16" ? 2 ** -24 / 1e-5 : 0)),
    1e-5,
  );
}

describe("dequant GEMV/GEMM of every GGML block format against models' ggml decoders", () => {
  // [batch, blocks per row, N]: one row and one column; blocks not a multiple of the lanes and N not of the rows per
  // workgroup; five blocks over subgroups of 4; a GEMM (batch 11 = a chunk of 8 and a ragged chunk of 3).
  const shapes: readonly (readonly [number, number, number])[] = [
    [1, 1, 1],
    [1, 3, 7],
    [2, 5, 5],
    [11, 2, 3],
  ];
  for (const t of TYPES) {
    for (const caps of Object.keys(CAPS)) {
      for (const [B, nb, N] of shapes) {
        // The unrolled CPU decoder makes large kernels of 256-element blocks: the subgroup shape stays on the GPU caps.
        if (caps === "cpu" && nb === 5 && t.endsWith("_K")) continue;
        it(`${t} on ${caps} caps: batch ${B}, ${nb} block(s) per row, N=${N} (random blocks)`, () => {
          const r = rng(nb * 7919 + N * 31 + B + t.length + caps.length * 101);
          check({ t, B, N, caps }, nb * descriptor(t).blockSize, [randomBlocks(r, t, N * nb)], nb * 13 + N);
        });
      }
    }
  }

  // Every activation and output storage type the synthesizer accepts, and two weights sharing x, on GPU and CPU caps.
  const dtypeCases: readonly Omit<Case, "t">[] = [
    { B: 2, N: 5, caps: "sg4", xDtype: "bf16" },
    { B: 1, N: 3, caps: "cpu", xDtype: "f16" },
    { B: 3, N: 4, caps: "tree", outDtype: "bf16" },
    { B: 1, N: 6, caps: "cpu", outDtype: "f16", xDtype: "bf16" },
    { B: 2, N: 3, caps: "cuda", heads: 2 },
    { B: 2, N: 2, caps: "cpu", heads: 2 },
  ];
  for (const t of ["Q4_K", "Q6_K", "Q5_1", "Q3_K"] as const) {
    for (const c of dtypeCases) {
      it(`${t} on ${c.caps} caps: x ${c.xDtype ?? "f32"}, out ${c.outDtype ?? "f32"}, ${c.heads ?? 1} weight(s), batch ${c.B}, N=${c.N}`, () => {
        const r = rng(c.B * 31 + c.N + (c.heads ?? 1) * 7 + c.caps.length);
        const nb = 2;
        check(
          { t, ...c },
          nb * descriptor(t).blockSize,
          Array.from({ length: c.heads ?? 1 }, () => randomBlocks(r, t, c.N * nb)),
          c.N * 17 + c.B,
        );
      });
    }
  }

  // Rows written by ggml's own quantizers (the GGUF fixtures), for the formats the fixtures hold.
  describe.skipIf(FIXTURES === undefined)(
    "ggml-encoded rows from fixtures/gguf (skipped when missing, outside CI)",
    () => {
      for (const t of ["Q4_K", "Q6_K", "Q5_0", "Q5_1", "Q8_0"] as const) {
        for (const caps of ["tree", "cpu"]) {
          it(`${t} on ${caps} caps: 5 fixture rows, batch 3`, () => {
            const rows = fixtureRows(t, 5);
            expect(rows, `a 2-D ${t} tensor in the fixtures`).toBeDefined();
            check({ t, B: 3, N: 5, caps }, rows!.K, [rows!.bytes], rows!.K + caps.length);
          });
        }
      }
    },
  );

  // Rows written by llama.cpp's llama_model_quantize (fixtures/gguf/formats, in the repo): the formats of issue #26.
  describe("llama.cpp-quantized rows from fixtures/gguf/formats", () => {
    for (const t of ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q5_K", "Q3_K", "Q2_K", "IQ4_NL", "IQ4_XS", "MXFP4"] as const) {
      for (const caps of ["tree", "cpu"]) {
        it(`${t} on ${caps} caps: 5 fixture rows, batch 3`, () => {
          const rows = fixtureRows(t, 5);
          expect(rows, `a ${t} tensor in fixtures/gguf/formats`).toBeDefined();
          check({ t, B: 3, N: 5, caps }, rows!.K, [rows!.bytes], rows!.K + caps.length);
        });
      }
    }
  });

  it("K not a multiple of the block size is a typed bad_shape error naming K, for every format", () => {
    for (const t of TYPES) {
      const f = descriptor(t);
      // K-quants: a multiple of 32 (a legacy block) that is not one of 256.
      const K = f.blockSize === 256 ? 256 + 32 : f.blockSize + 16;
      for (const caps of Object.values(CAPS)) {
        expect(() => synthesizeDequantGemv({ name: "dq", K, N: 2, format: f }, caps)).toThrow(
          expect.objectContaining({ code: "bad_shape", context: expect.objectContaining({ param: "K", value: K }) }),
        );
      }
    }
  });
});
