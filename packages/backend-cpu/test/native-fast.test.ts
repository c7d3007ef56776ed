// The `fast` native GEMVs (decision 2320) of the library generated from the kernel IR: the activation quantizer then
// the integer-dot GEMV, against a float64 dot product of graph-ir-decoded weights with the activations quantized as
// llama.cpp's ggml-quants.c does (quantize_row_q8_0's AVX2 path, quantize_row_q8_K_ref), re-derived here from its
// source; and a planted violation (one weight block's scale changed) that the same check catches. Every format of
// kernelgen's FAST_FORMATS (Q8_0, Q4_K, Q6_K: decisions 2320, 2335).
import { randomFillSync } from "node:crypto";
import { decodePacked, type PackedFormat } from "@poot/graph-ir";
import { FAST_FORMATS, FASTX_GROUP } from "@poot/kernelgen";
import { ggmlPackedFormat } from "@poot/models";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WA } from "../src/memory.js";
import { loadNodeNative } from "../src/native/node-library.js";
import { THREAD_SLOT } from "../src/thread/core.js";

const here = process.platform === "linux" && process.arch === "x64";
const memory = new WA.Memory({ initial: 64, maximum: 64, shared: true });
const u8 = new Uint8Array(memory.buffer);
const u32 = new Uint32Array(memory.buffer);
const f32 = new Float32Array(memory.buffer);
/** Byte offsets: argument block, x, r, y, W, W1, then the quantized activations q, d, s, then the slabs (2390, 2430). */
const AT = {
  args: 0,
  x: 1 << 12,
  r: 1 << 16,
  y: 1 << 17,
  w: 1 << 19,
  w1: 1 << 21,
  q: 3 << 20,
  d: 7 << 19,
  s: 15 << 18,
  t: (15 << 18) + (1 << 16),
};

/** The formats with fast GEMVs, and the activation quantizer each reads (llama.cpp's vec_dot_type). */
const QUANT = { q8_0: "q8_0", q4_k: "q8_k", q6_k: "q8_k" } as const;
type Fmt = keyof typeof QUANT;
/** Byte offsets of the f16 scales in each format's block (d; Q4_K also dmin). */
const HALVES: Record<Fmt, number[]> = { q8_0: [0], q4_k: [0, 2], q6_k: [208] };

const fr = Math.fround;
/** Round half to even (nearest_int / _mm256_round_ps). */
const rne = (v: number): number => {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};
/** f32 to the nearest binary16 value (round to nearest even), as GGML_FP32_TO_FP16. */
function toHalf(v: number): number {
  const a = Math.abs(v);
  if (a === 0) return 0;
  const e = Math.max(Math.floor(Math.log2(a)), -14);
  const ulp = 2 ** (e - 10);
  return Math.sign(v) * rne(a / ulp) * ulp;
}

/** One row quantized as llama.cpp does for `fmt`'s vec_dot_type, dequantized: q · d per element. */
function llamaQuant(x: Float32Array, fmt: string): Float64Array {
  const B = fmt === "q8_0" ? 32 : 256;
  const out = new Float64Array(x.length);
  for (let b0 = 0; b0 < x.length; b0 += B) {
    let amax = 0,
      max = 0;
    for (let j = 0; j < B; j++)
      if (Math.abs(x[b0 + j]!) > amax) {
        amax = Math.abs(x[b0 + j]!);
        max = x[b0 + j]!;
      }
    if (fmt === "q8_0") {
      const d = toHalf(fr(amax / 127));
      const id = amax !== 0 ? fr(127 / amax) : 0;
      for (let j = 0; j < B; j++) out[b0 + j] = rne(fr(x[b0 + j]! * id)) * d;
    } else {
      if (amax === 0) continue;
      const iscale = fr(-127 / max);
      const d = fr(1 / iscale);
      for (let j = 0; j < B; j++) out[b0 + j] = Math.min(127, rne(fr(iscale * x[b0 + j]!))) * d;
    }
  }
  return out;
}

/** Random weights of `fmt` (finite halves) for N rows of K at `at`; returns them decoded. */
function weights(fmt: Fmt, N: number, K: number, at: number): Float64Array {
  const packed = ggmlPackedFormat(fmt.toUpperCase())!;
  const bytes = u8.subarray(at, at + ((N * K) / packed.blockSize) * packed.bytesPerBlock);
  randomFillSync(bytes);
  for (let o = 0; o < bytes.length; o += packed.bytesPerBlock) for (const h of HALVES[fmt]) bytes[o + h + 1]! &= 0x1b;
  return decodePacked(packed as PackedFormat, bytes, N * K);
}

/** Rows of W in every check. */
const ROWS = 37;

/**
 * A plant: block `block` of every row of W gets its f16 scale's exponent raised by one after the reference was
 * decoded (the kernel reads about 2d, the reference kept d). Every row, so that no row's random products cancelling
 * out can hide it: the check takes the worst row.
 */
const raiseScales = (fmt: Fmt, block: number, K: number) => (): void => {
  const packed = ggmlPackedFormat(fmt.toUpperCase())!;
  const perRow = K / packed.blockSize;
  for (let n = 0; n < ROWS; n++) {
    const o = AT.w + (n * perRow + block) * packed.bytesPerBlock;
    const hi = o + HALVES[fmt][0]! + 1;
    u8[hi] = u8[hi]! + 4;
  }
};

/**
 * Planted (decision 2403): the quantized q8_k activations of M rows of K put back into llama.cpp's `block_q8_K` order
 * (element e at byte e of its block) from the quantizer's lane order (element e at 64 · ((e >> 2) & 3) + 4 · (e >> 4)
 * + (e & 3)), so that the k-quant loops, which permute the weights into the quantizer's order, pair the wrong bytes.
 */
const naturalQ8K = (M: number, K: number) => (): void => {
  for (let o = AT.q; o < AT.q + M * K; o += 256) {
    const lanes = u8.slice(o, o + 256);
    for (let e = 0; e < 256; e++) u8[o + e] = lanes[64 * ((e >> 2) & 3) + 4 * (e >> 4) + (e & 3)]!;
  }
};

/** Threads a `fastx` check deals its workgroups to, round robin, as the pool's claims do (decision 2440). */
const FASTX_THREADS = 3;

/**
 * Runs quantizer + fast GEMV for (M, N, K, epilogue), or with `fastx` the GEMV that quantizes x itself, once per
 * thread into that thread's slot of q, d, s (decisions 2410, 2440: the workgroups dealt to {@link FASTX_THREADS}
 * threads, each thread's first call without the FASTX_GROUP `filled` bit, later ones with it; `fastx-stale`, planted:
 * every call with it, so no thread quantizes); returns max |y − ref| / Σ|w x| against llama.cpp's arithmetic. `plant`
 * changes the weights after the reference decoded them, `plantQ` the quantized activations (`fast` only).
 */
function check(
  fmt: Fmt,
  M: number,
  epi: "none" | "add" | "heads2" | "swiglu",
  plant?: () => void,
  K = 512,
  R = 8,
  plantQ?: () => void,
  kind: "fast" | "fastx" | "fastx-stale" = "fast",
): number {
  const lib = loadNodeNative()!;
  const base = lib.address(u8);
  const N = ROWS;
  const W = [weights(fmt, N, K, AT.w), weights(fmt, N, K, AT.w1)];
  plant?.();
  for (let i = 0; i < M * K; i++) f32[AT.x / 4 + i] = (Math.random() * 2 - 1) * (i % 7 === 0 ? 4 : 1);
  for (let i = 0; i < M * N; i++) f32[AT.r / 4 + i] = Math.random();
  const x = kind !== "fast";
  const { threadShift, filledShift } = FASTX_GROUP;
  const group = (g: number): number =>
    x
      ? (g |
          ((g % FASTX_THREADS) << threadShift) |
          (g >= FASTX_THREADS || kind === "fastx-stale" ? 2 ** filledShift : 0)) >>>
        0
      : g;
  const call = (symbol: string, words: number[], groups: number): void => {
    u32.set(words, AT.args / 4);
    const run = lib.hostKernel({ native: true, library: lib.path, koffi: lib.koffi, symbol, base });
    for (let g = 0; g < groups; g++) run(AT.args, group(g), 0, 0, 0, 1);
  };
  if (kind === "fast") {
    call(`poot_quant_${QUANT[fmt]}`, [AT.x, AT.q, AT.d, AT.s, M, K], M);
    plantQ?.();
  }
  // fastx: the slots start as garbage, so a thread reading a slot it did not fill fails the check.
  else randomFillSync(u8.subarray(AT.q, AT.s + FASTX_THREADS * M * (K / 4)));
  const ins = x ? [AT.x, AT.q, AT.d, AT.s, AT.q, AT.w] : [AT.q, AT.d, AT.s, AT.w];
  const buffers = epi === "none" ? [...ins, AT.y] : [...ins, epi === "add" ? AT.r : AT.w1, AT.y];
  // The fast GEMVs take their workgroups' slabs (decisions 2390, 2430), bound twice (words and bytes).
  if (kind === "fast") buffers.push(AT.t, AT.t);
  f32.fill(Number.NaN, AT.y / 4, AT.y / 4 + 2 * M * N);
  call(`poot_gemv_${fmt}_${x ? "fastx" : "fast"}_${epi}`, [...buffers, M, N, K, R], Math.ceil(N / R));
  let worst = 0;
  for (let m = 0; m < M; m++) {
    const xq = llamaQuant(f32.subarray(AT.x / 4 + m * K, AT.x / 4 + (m + 1) * K), fmt);
    const dot = (h: number, n: number): { ref: number; mag: number } => {
      let ref = epi === "add" ? f32[AT.r / 4 + m * N + n]! : 0,
        mag = Math.abs(ref);
      for (let k = 0; k < K; k++) {
        ref += W[h]![n * K + k]! * xq[k]!;
        mag += Math.abs(W[h]![n * K + k]! * xq[k]!);
      }
      return { ref, mag };
    };
    for (let h = 0; h < (epi === "heads2" ? 2 : 1); h++)
      for (let n = 0; n < N; n++) {
        const got = f32[AT.y / 4 + h * M * N + m * N + n]!;
        if (epi === "swiglu") {
          // silu(gate) · up, gate = W: each sum's error bound carried through silu (|silu'| < 1.1).
          const [g, u] = [dot(0, n), dot(1, n)];
          const sg = g.ref / (1 + Math.exp(-g.ref));
          const scale = 1.1 * g.mag * Math.abs(u.ref) + Math.abs(sg) * u.mag + 1e-30;
          worst = Math.max(worst, Math.abs(got - sg * u.ref) / scale);
        } else {
          const { ref, mag } = dot(h, n);
          worst = Math.max(worst, Math.abs(got - ref) / (mag + 1e-30));
        }
      }
  }
  return worst;
}

describe.skipIf(!here)(
  "fast native GEMVs (8-bit activations, integer dot products) against llama.cpp's arithmetic",
  () => {
    const lib = here ? loadNodeNative() : null;
    test("every format with a fast GEMV is checked here, with llama.cpp's vec_dot_type as its quantizer", () => {
      expect(FAST_FORMATS).toEqual(QUANT);
    });
    test("the pool calls slotted kernels with the group ids the fastx GEMVs decode (decision 2440)", () => {
      expect(THREAD_SLOT.threadShift).toBe(FASTX_GROUP.threadShift);
      expect(THREAD_SLOT.maxThreads).toBe(FASTX_GROUP.threadMask + 1);
      expect(THREAD_SLOT.filled).toBe(2 ** FASTX_GROUP.filledShift);
      expect(FASTX_GROUP.mask).toBe(2 ** FASTX_GROUP.threadShift - 1);
    });
    // Each kernel set the library dispatches to: AVX-512 VNNI `vpdpbusd` (decisions 2320, 2330) where the CPU has it,
    // and the AVX2 fallback with the dot product widened (decision 2335), forced here on a VNNI CPU too.
    const sets = [
      { isa: "avx512", runs: lib?.vnni === true },
      { isa: "avx2", runs: lib?.fast === true },
    ] as const;
    for (const { isa, runs } of sets)
      describe.skipIf(!runs)(`${isa} kernels`, () => {
        beforeAll(() => {
          expect(lib!.force(isa), `this CPU runs the ${isa} set`).toBe(true);
        });
        afterAll(() => {
          lib!.force(lib!.vnni ? "avx512" : "avx2");
        });
        for (const fmt of Object.keys(QUANT) as Fmt[])
          test(`${fmt}: none, add, heads2 and swiglu epilogues, M = 1, 6 and 19`, () => {
            for (const M of [1, 6, 19])
              for (const epi of ["none", "add", "heads2", "swiglu"] as const)
                expect(check(fmt, M, epi), `${fmt} ${epi} M=${M}: max |y - ref| / sum |w x|`).toBeLessThan(1e-5);
          });

        // 17 blocks of 32: eight pairs in 16 lanes, the last block alone in 8 (decision 2330).
        test("q8_0 with an odd number of blocks per row (K = 544), M = 1 and 6", () => {
          for (const M of [1, 6])
            for (const epi of ["none", "heads2"] as const)
              expect(check("q8_0", M, epi, undefined, 544), `q8_0 ${epi} M=${M} K=544`).toBeLessThan(1e-5);
          // Planted: the scale of each row's last (unpaired) block doubled after decoding the reference.
          expect(check("q8_0", 1, "none", raiseScales("q8_0", 16, 544), 544)).toBeGreaterThan(1e-3);
        });

        // Register tiles (decision 2340): 3, 5 and 11 weight rows per workgroup (under and over Q8_0's tile of 4 weight
        // rows, 2 per head with heads2, and its decode tile of 8, 4 per head: decision 2380, taken at M = 1 and 3), the
        // x rows' tails (M = 6, 19 against tiles of 4 and 8 rows).
        test("tile edges: 3, 5 and 11 weight rows per workgroup, M = 1, 3, 6 and 19", () => {
          for (const fmt of Object.keys(QUANT) as Fmt[])
            for (const R of [3, 5, 11])
              for (const M of [1, 3, 6, 19])
                for (const epi of ["none", "heads2", "swiglu"] as const)
                  expect(check(fmt, M, epi, undefined, 512, R), `${fmt} ${epi} M=${M} R=${R}`).toBeLessThan(1e-5);
        });

        // The slab GEMM (decision 2390, Q8_0 at M >= 16): 16 weight rows per slab (8 per head with two heads), 8 x rows
        // per pass; R = 16, 19 and 37 weight rows per workgroup (whole slabs, a tail of 3, two slabs and a tail of 5),
        // M = 16, 19 and 24 (an x-row tail of 3), an odd number of blocks per row (K = 544).
        test("q8_0 slab: R = 16, 19 and 37, M = 16, 19 and 24, K = 512 and 544", () => {
          for (const K of [512, 544])
            for (const R of [16, 19, 37])
              for (const M of [16, 19, 24])
                for (const epi of ["none", "add", "heads2", "swiglu"] as const)
                  expect(check("q8_0", M, epi, undefined, K, R), `${epi} M=${M} R=${R} K=${K}`).toBeLessThan(1e-5);
          // Planted: the scale of block 1 of every row doubled, through the slab.
          expect(check("q8_0", 16, "none", raiseScales("q8_0", 1, 512), 512, 16)).toBeGreaterThan(1e-3);
        });

        // The k-quant slab GEMMs (decision 2430, Q4_K and Q6_K at M >= 16): 16 weight rows unpacked per block of 256
        // (8 per head with two heads), 8 x rows per pass; R = 16, 19 and 37 (whole slabs, a tail of 3, two slabs and a
        // tail of 5), M = 16, 19 and 24 (an x-row tail of 3), K = 512 and 768 (2 and 3 blocks per row; M ≤ 19 there, the
        // x rows' room).
        for (const fmt of ["q4_k", "q6_k"] as const)
          test(`${fmt} slab: R = 16, 19 and 37, M = 16, 19 and 24, K = 512 and 768`, () => {
            for (const [K, Ms] of [
              [512, [16, 19, 24]],
              [768, [16, 19]],
            ] as const)
              for (const R of [16, 19, 37])
                for (const M of Ms)
                  for (const epi of ["none", "add", "heads2", "swiglu"] as const)
                    expect(check(fmt, M, epi, undefined, K, R), `${epi} M=${M} R=${R} K=${K}`).toBeLessThan(1e-5);
            // Planted: the scale of block 1 of every row doubled, and the activations in llama.cpp's byte order,
            // through the slab.
            expect(check(fmt, 16, "none", raiseScales(fmt, 1, 512), 512, 16)).toBeGreaterThan(1e-3);
            expect(check(fmt, 19, "heads2", raiseScales(fmt, 1, 768), 768, 37)).toBeGreaterThan(1e-3);
            expect(check(fmt, 24, "none", undefined, 512, 16, naturalQ8K(24, 512))).toBeGreaterThan(1e-3);
          });

        // The GEMVs that quantize x themselves (decisions 2410, 2440: decode's M = 1 in the executor; the kernel takes
        // any M), each thread once into its own slot of q, d and s, which start as random bytes.
        test("fastx: every format and epilogue quantizing x itself, M = 1, 3 and 6, 3 and 8 rows per workgroup", () => {
          for (const fmt of Object.keys(QUANT) as Fmt[])
            for (const R of [3, 8])
              for (const M of [1, 3, 6])
                for (const epi of ["none", "add", "heads2", "swiglu"] as const)
                  expect(
                    check(fmt, M, epi, undefined, 512, R, undefined, "fastx"),
                    `${fmt} fastx ${epi} M=${M} R=${R}`,
                  ).toBeLessThan(1e-5);
          expect(check("q8_0", 1, "none", undefined, 544, 8, undefined, "fastx"), "q8_0 fastx K=544").toBeLessThan(
            1e-5,
          );
          expect(check("q8_0", 1, "none", raiseScales("q8_0", 1, 512), 512, 8, undefined, "fastx")).toBeGreaterThan(
            1e-3,
          );
          expect(check("q4_k", 1, "swiglu", raiseScales("q4_k", 1, 512), 512, 8, undefined, "fastx")).toBeGreaterThan(
            1e-3,
          );
          // Planted: every call says its thread already quantized x, so the slots stay garbage.
          for (const fmt of Object.keys(QUANT) as Fmt[]) {
            const worst = check(fmt, 1, "none", undefined, 512, 8, undefined, "fastx-stale");
            expect(Number.isNaN(worst) || worst > 1e-3, `${fmt}: ${worst}`).toBe(true);
          }
        });

        // Q8_0's decode walk (decision 2470): below K = 4096 one weight row per pass; from K = 4096 on 8 weight rows
        // per pass (4 per head with two heads), row i of 8 runs of R / 8 consecutive rows, the rows past the runs one at
        // a time. R = 3 (no run), 8 and 11 (runs of one row, a tail of 3), 19 and 37 (runs of 2 and 4, tails of 3 and
        // 5; with two heads runs of 4 and 9, tails of 3 and 1), M = 1 and 3, the `fast` and `fastx` kernels.
        test("q8_0 decode runs: K = 4096, R = 3, 8, 11, 19 and 37, M = 1 and 3, fast and fastx", () => {
          for (const kind of ["fast", "fastx"] as const)
            for (const R of [3, 8, 11, 19, 37])
              for (const M of [1, 3])
                for (const epi of ["none", "add", "heads2", "swiglu"] as const)
                  expect(
                    check("q8_0", M, epi, undefined, 4096, R, undefined, kind),
                    `q8_0 ${kind} ${epi} M=${M} R=${R} K=4096`,
                  ).toBeLessThan(1e-5);
          // Planted: the last block's scale raised in every row after the reference decoded them.
          for (const R of [8, 37])
            expect(
              check("q8_0", 1, "add", raiseScales("q8_0", 127, 4096), 4096, R, undefined, "fastx"),
            ).toBeGreaterThan(1e-3);
        });

        test("planted violation: one weight block's scale doubled after decoding the reference fails the check", () => {
          expect(check("q8_0", 1, "none", raiseScales("q8_0", 1, 512))).toBeGreaterThan(1e-3);
          expect(check("q4_k", 1, "none", raiseScales("q4_k", 1, 512))).toBeGreaterThan(1e-3);
          expect(check("q6_k", 1, "none", raiseScales("q6_k", 1, 512))).toBeGreaterThan(1e-3);
          expect(check("q4_k", 1, "swiglu", raiseScales("q4_k", 1, 512))).toBeGreaterThan(1e-3);
        });

        test("planted violation: q8_k activations in llama.cpp's byte order, not the quantizer's lanes, fail", () => {
          for (const fmt of ["q4_k", "q6_k"] as const)
            for (const M of [1, 19])
              expect(check(fmt, M, "none", undefined, 512, 8, naturalQ8K(M, 512)), `${fmt} M=${M}`).toBeGreaterThan(
                1e-3,
              );
        });
      });
  },
);
