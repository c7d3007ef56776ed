// Every native GEMV of the library generated from the kernel IR, both kernel sets (AVX2, AVX-512), against a float64 dot
// product of weights decoded by graph-ir's reference decoder (packed formats) or by the IEEE formats (f16, bf16):
// each format, each epilogue (SwiGLU's against silu(gate) · up of the two sums), one row of x (decode), six and eleven
// (passes of eight or four rows and a remainder, prefill); dense formats also with K = 8195 and packed ones with K = 8192,
// where a pass with one x row takes several rows of W (decisions 2370, 2460).
import { randomFillSync } from "node:crypto";
import { decodePacked, type PackedFormat } from "@poot/graph-ir";
import { ggmlPackedFormat } from "@poot/models";
import { describe, expect, test } from "vitest";
import { WA } from "../src/memory.js";
import { loadNodeNative } from "../src/native/node-library.js";

const here = process.platform === "linux" && process.arch === "x64";
const memory = new WA.Memory({ initial: 80, maximum: 80, shared: true });
const u8 = new Uint8Array(memory.buffer);
const u32 = new Uint32Array(memory.buffer);
const f32 = new Float32Array(memory.buffer);
/** Byte offsets: argument block, x, r, y, W, W1. */
const AT = { args: 0, x: 1 << 12, r: 0x60000, y: 0x70000, w: 1 << 19, w1: 1 << 21 };

/** IEEE binary16 bits to a number. */
function half(h: number): number {
  const e = (h >> 10) & 31,
    m = h & 1023,
    s = h & 0x8000 ? -1 : 1;
  return s * (e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15));
}

/** Random weights of `fmt` for N rows of K (finite halves, small scales) written at `at`; returns them decoded. */
function weights(fmt: string, N: number, K: number, at: number): Float64Array {
  const packed = ggmlPackedFormat(fmt.toUpperCase());
  if (packed !== null) {
    const bytes = u8.subarray(at, at + ((N * K) / packed.blockSize) * packed.bytesPerBlock);
    randomFillSync(bytes);
    const halves = { q8_0: [0], q4_k: [0, 2], q6_k: [208] }[fmt]!;
    for (let o = 0; o < bytes.length; o += packed.bytesPerBlock) for (const h of halves) bytes[o + h + 1]! &= 0x1b;
    return decodePacked(packed as PackedFormat, bytes, N * K);
  }
  const out = new Float64Array(N * K);
  for (let i = 0; i < N * K; i++) {
    const v = (Math.random() * 2 - 1) * 2;
    if (fmt === "f32") out[i] = f32[at / 4 + i] = v;
    else {
      const bits = new Uint16Array(memory.buffer, at, N * K);
      bits[i] = fmt === "bf16" ? (Math.random() * 0x10000) & 0xbfff : (Math.random() * 0x10000) & 0xbbff;
      out[i] = fmt === "bf16" ? new Float32Array(new Uint32Array([bits[i]! << 16]).buffer)[0]! : half(bits[i]!);
    }
  }
  return out;
}

const FORMATS = ["f32", "f16", "bf16", "q8_0", "q4_k", "q6_k"] as const;

/** silu(v) = v / (1 + e^−v) in float64. */
const silu = (v: number): number => v / (1 + Math.exp(-v));

describe.skipIf(!here)("native GEMV kernels against a float64 reference", () => {
  for (const isa of ["avx2", "avx512"] as const) {
    for (const fmt of FORMATS) {
      const dense = !fmt.startsWith("q");
      for (const K of dense ? [103, 8195] : [512, 8192])
        test(`${isa} ${fmt}: none, add, heads2 and swiglu epilogues, M = 1, 6 and 11, K = ${K}`, ({ skip }) => {
          const lib = loadNodeNative();
          expect(lib, "the library loads on this CPU").not.toBeNull();
          const best = lib!.isa;
          if (!lib!.force(isa)) skip(`this CPU cannot run ${isa}`);
          const N = 37,
            R = 8;
          const W = [weights(fmt, N, K, AT.w), weights(fmt, N, K, AT.w1)];
          const base = lib!.address(u8);
          for (const M of [1, 6, 11]) {
            for (let i = 0; i < M * K; i++) f32[AT.x / 4 + i] = Math.random() * 2 - 1;
            for (let i = 0; i < M * N; i++) f32[AT.r / 4 + i] = Math.random();
            for (const epi of ["none", "add", "heads2", "swiglu"] as const) {
              const symbol = `poot_gemv_${fmt}_${epi}`;
              const buffers = epi === "none" ? [AT.x, AT.w, AT.y] : [AT.x, AT.w, epi === "add" ? AT.r : AT.w1, AT.y];
              u32.set([...buffers, M, N, K, R], AT.args / 4);
              const run = lib!.hostKernel({ native: true, library: lib!.path, koffi: lib!.koffi, symbol, base });
              f32.fill(Number.NaN, AT.y / 4, AT.y / 4 + 2 * M * N);
              for (let g = 0; g < Math.ceil(N / R); g++) run(AT.args, g, 0, 0, 0, 1);
              /** Row n of head h against x row m in float64: the sum (plus r with add) and the sum of |terms|. */
              const dot = (h: number, m: number, n: number): { ref: number; mag: number } => {
                let ref = epi === "add" ? f32[AT.r / 4 + m * N + n]! : 0,
                  mag = Math.abs(ref);
                for (let k = 0; k < K; k++) {
                  const p = W[h]![n * K + k]! * f32[AT.x / 4 + m * K + k]!;
                  ref += p;
                  mag += Math.abs(p);
                }
                return { ref, mag };
              };
              let worst = 0,
                swapped = 0,
                neighbour = 0;
              for (let h = 0; h < (epi === "heads2" ? 2 : 1); h++)
                for (let m = 0; m < M; m++)
                  for (let n = 0; n < N; n++) {
                    const got = f32[AT.y / 4 + h * M * N + m * N + n]!;
                    if (epi === "swiglu") {
                      // silu(gate) · up, gate = W; the error bound propagates each sum's through silu (|silu'| < 1.1).
                      const [g, u] = [dot(0, m, n), dot(1, m, n)];
                      const scale = 1.1 * g.mag * Math.abs(u.ref) + Math.abs(silu(g.ref)) * u.mag + 1e-30;
                      worst = Math.max(worst, Math.abs(got - silu(g.ref) * u.ref) / scale);
                      swapped = Math.max(swapped, Math.abs(got - silu(u.ref) * g.ref) / scale);
                    } else {
                      const { ref, mag } = dot(h, m, n);
                      worst = Math.max(worst, Math.abs(got - ref) / (mag + 1e-30));
                      // Planted: row n's output against row n ^ 1's reference (a multi-row pass storing its neighbour).
                      if (m === 0 && (n ^ 1) < N) {
                        const other = dot(h, m, n ^ 1);
                        neighbour = Math.max(neighbour, Math.abs(got - other.ref) / (other.mag + 1e-30));
                      }
                    }
                  }
              expect(worst, `${symbol} (${isa}) M=${M}: max |y - ref| / sum |w x|`).toBeLessThan(1e-5);
              // Planted: the reference with gate and up swapped fails the same bound.
              if (epi === "swiglu") expect(swapped, `${symbol} against swapped heads`).toBeGreaterThan(1e-3);
              else expect(neighbour, `${symbol} M=${M} against the neighbouring rows`).toBeGreaterThan(1e-3);
            }
          }
          lib!.force(best as "avx2" | "avx512");
        });
    }
  }
});
