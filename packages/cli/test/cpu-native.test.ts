// backend-cpu's native GEMVs (decisions 0952, 2301, 2310) on the CPU executor: the library generated from the kernel
// IR, its AVX2 and AVX-512 kernel sets forced in turn, every weight format they serve, one row and a batch, with no
// epilogue, a fused residual add, and two SiLU-gated heads whose epilogue runs as a Wasm phase over the accumulators.
// Oracle: graph-ir's float64 MatMul over weights decoded by models' ggml-port decoders (independent of models' recipes,
// which kernelgen's decoders follow). Lives here because
// it needs @poot/models, which a backend may not import.
import { createCpuExecutor, type CpuExecutor } from "@poot/backend-cpu";
import {
  Builder,
  bf16BitsToF32,
  evaluate,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  type DType,
  type Ref,
} from "@poot/graph-ir";
import type { GGMLTypeName } from "@poot/models";
import { afterAll, describe, expect, it } from "vitest";
import { decodeIndependently, descriptor, expectClose, randF32, randomBlocks, rng } from "./packed-formats.js";

type Format = GGMLTypeName | "F32" | "F16" | "BF16";
type Epilogue = "none" | "residual" | "gated";

const probe = createCpuExecutor({ threads: 1 });
const native = probe.native;
probe.dispose();
const ISAS = native === null ? [] : (["avx2", "avx512"] as const).filter((isa) => native.force(isa));
afterAll(
  () => void (native !== null && native.force(native.isa === "avx512" || ISAS.includes("avx512") ? "avx512" : "avx2")),
);

/** Random [N, K] weights of `f`: the executor's bytes or bits, and the oracle's independently decoded f32 values. */
function weights(
  f: Format,
  N: number,
  K: number,
  seed: number,
): { dtype: DType; data: Uint8Array | Uint16Array | Float32Array; values: Float32Array } {
  const r = rng(seed);
  if (f === "F32") {
    const v = randF32(r, N * K);
    return { dtype: "f32", data: v, values: v };
  }
  if (f === "F16" || f === "BF16") {
    const bits = Uint16Array.from(randF32(r, N * K), f === "F16" ? f32ToF16Bits : f32ToBf16Bits);
    return {
      dtype: f === "F16" ? "f16" : "bf16",
      data: bits,
      values: Float32Array.from(bits, f === "F16" ? f16BitsToF32 : bf16BitsToF32),
    };
  }
  const d = descriptor(f);
  const bytes = randomBlocks(r, f, (N * K) / d.blockSize);
  return { dtype: { packed: d }, data: bytes, values: decodeIndependently(f, bytes) };
}

/** y = x·W^T (+ r), or silu(x·Wg^T) * (x·Wu^T); for the executor (packed/half consts) or the oracle (decoded f32 consts). */
function graph(epi: Epilogue, M: number, N: number, K: number, dtype: DType | null): ReturnType<Builder["build"]> {
  const g = new Builder();
  const x = g.slot("Activations", "x", "f32", [M, K]);
  const made = new Map<string, Ref>();
  const w = (key: string): Ref => {
    if (!made.has(key))
      made.set(key, dtype === null ? g.transpose(g.const(key, "f32", [N, K]), [1, 0]) : g.const(key, dtype, [N, K]));
    return made.get(key)!;
  };
  const lin = (key: string): Ref => (dtype === null ? g.matmul(x, w(key)) : g.linear(x, w(key)));
  if (epi === "gated") g.output("y", g.mul(g.silu(lin("w0")), lin("w1")));
  else g.output("y", epi === "residual" ? g.add(lin("w0"), g.slot("Residual", "r", "f32", [M, N])) : lin("w0"));
  if (dtype === null)
    for (const k of epi === "gated" ? ["w0", "w1"] : ["w0"])
      g.output(`s_${k}`, g.matmul(g.unary("Abs", x), g.unary("Abs", w(k))));
  return g.build();
}

/** Runs the case on `exec`; returns its output and the count of native dispatches per step. */
function runOn(
  exec: CpuExecutor,
  epi: Epilogue,
  M: number,
  N: number,
  K: number,
  dtype: DType,
  consts: Record<string, Uint8Array | Uint16Array | Float32Array>,
  slots: Record<string, Float32Array>,
): { y: Float32Array; native: number } {
  try {
    exec.bindWeights((key) => consts[key]!);
    const p = exec.stage(graph(epi, M, N, K, dtype), { name: "native-case" });
    for (const [k, v] of Object.entries(slots)) p.writeSlot(k, v);
    p.run();
    return { y: p.readOutput("y") as Float32Array, native: p.nativeDispatchesPerStep() };
  } finally {
    exec.dispose();
  }
}

/** One case: the native output (and the Wasm path's, with native off) within f32 accumulation error of float64. */
function check(f: Format, epi: Epilogue, M: number, N: number, K: number, seed: number): void {
  const heads = epi === "gated" ? 2 : 1;
  const ws = Array.from({ length: heads }, (_, h) => weights(f, N, K, seed + h));
  const consts = Object.fromEntries(ws.map((w, h) => [`w${h}`, w.data]));
  const slots: Record<string, Float32Array> = {
    x: randF32(rng(seed + 7), M * K),
    ...(epi === "residual" ? { r: randF32(rng(seed + 8), M * N) } : {}),
  };
  const ref = evaluate(graph(epi, M, N, K, null), {
    consts: Object.fromEntries(ws.map((w, h) => [`w${h}`, w.values])),
    slots,
  }).outputs;
  const want = ref["y"]!.data;
  // 1e-5 of Σ|x·w| per accumulator; through the gate, each accumulator's bound scaled by the other factor (≤ 1 for silu').
  const s0 = ref["s_w0"]!.data;
  const scale =
    heads === 1
      ? Array.from(s0)
      : Array.from(s0, (s, i) => s * (Math.abs(want[i]!) + 1) * 2 + ref["s_w1"]!.data[i]! * 2);
  const nat = runOn(createCpuExecutor({ threads: 2 }), epi, M, N, K, ws[0]!.dtype, consts, slots);
  expect(nat.native, "plans the native GEMV served").toBeGreaterThan(0);
  expectClose(nat.y, want, scale, 1e-5);
}

describe.skipIf(native === null)("native CPU GEMVs against float64 over independently decoded weights", () => {
  // K: two K-quant super-blocks; dense K = 524 leaves a tail past whole 8- and 16-lane vectors. N = 151: workgroups of 5 rows (a 4-row prefill tile and a lone row), the last one short.
  const formats: readonly Format[] = ["Q8_0", "Q4_K", "Q6_K", "F32", "F16", "BF16"];
  for (const isa of ISAS) {
    for (const f of formats) {
      for (const epi of ["none", "residual", "gated"] as const) {
        // The generated kernels take x rows eight (AVX2, AVX-512) or four at a time, then one by one: M = 11 runs both.
        for (const M of [1, 11]) {
          it(`${isa} ${f}: ${epi}, M=${M}`, () => {
            native!.force(isa);
            const K = f.startsWith("Q") ? 512 : 524;
            check(f, epi, M, 151, K, 1000 + M * 31 + f.length * 7 + epi.length);
          });
        }
      }
    }
  }

  it("native: false runs every plan's Wasm kernel", () => {
    const exec = createCpuExecutor({ threads: 2, native: false });
    expect(exec.native).toBeNull();
    expect(exec.caps.device).not.toContain("native");
    const w = weights("Q8_0", 8, 64, 3);
    const out = runOn(exec, "none", 1, 8, 64, w.dtype, { w0: w.data }, { x: randF32(rng(4), 64) });
    expect(out.native).toBe(0);
  });
});
