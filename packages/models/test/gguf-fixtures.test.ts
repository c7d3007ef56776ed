// Dequantized GGUF fixture tensors vs the same tensors in model-F32.gguf (ggml quantized them from it),
// each within its format's quantization bound; also header facts the fixture README states.
import * as fs from "node:fs";
import { afterAll, describe, expect, test } from "vitest";
import { openGGUF, type GGUFTensorInfo } from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

const families = FIXTURES
  ? fs.readdirSync(fixture("gguf")).filter((f) => fs.existsSync(fixture("gguf", f, "model-F32.gguf")))
  : [];

/**
 * Max allowed |Δ| for one block given the F32 reference values of that block (float64 arithmetic).
 * Symmetric formats round x/d with d = amax/qmax: error ≤ d/2, plus the f16 rounding of d (≤ qmax·d·2⁻¹¹).
 * Asymmetric formats: step = range/(levels−1). K-quants quantize their scales to 6 bits and search
 * the scale (which may clip extremes), so they get one full step of the super-block's range.
 * Q4_0/Q5_0 use d = -(signed max)/qmax, so the opposite extreme clamps to qmax−1: there the bound
 * is the distance to that top level (up to one step), elsewhere d/2.
 */
function bound(format: string, ref: Float32Array, start: number, n: number): (x: number) => number {
  let amax = 0,
    lo = Infinity,
    hi = -Infinity;
  for (let i = start; i < start + n; i++) {
    const v = ref[i]!;
    amax = Math.max(amax, Math.abs(v));
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const sym = (qmax: number) => (amax / qmax) * (0.5 + qmax * 2 ** -11) + 1e-12;
  const asym = (levels: number) =>
    ((hi - lo) / (levels - 1)) * 0.5 + Math.abs(lo) * 2 ** -11 + (hi - lo) * 2 ** -11 + 1e-12;
  switch (format) {
    case "F32":
      return () => 0;
    case "F16":
      return (x) => Math.abs(x) * 2 ** -11 + 2 ** -25;
    case "Q8_0": {
      const b = sym(127);
      return () => b;
    }
    case "Q4_0":
      return clampedSym(ref, start, n, 8);
    case "Q5_0":
      return clampedSym(ref, start, n, 16);
    case "Q4_1": {
      const b = asym(16);
      return () => b;
    }
    case "Q5_1": {
      const b = asym(32);
      return () => b;
    }
    case "Q4_K":
      return () => (hi - lo) / 15;
    case "Q6_K":
      return () => amax / 31;
    default:
      throw new Error(`no bound for ${format}`);
  }
}

function clampedSym(ref: Float32Array, start: number, n: number, qmax: number): (x: number) => number {
  let m = 0;
  for (let i = start; i < start + n; i++) if (Math.abs(ref[i]!) > Math.abs(m)) m = ref[i]!;
  const d = m / -qmax;
  const slack = Math.abs(d) * qmax * 2 ** -11 + 1e-12;
  if (d === 0) return () => slack;
  return (x) => {
    const t = x / d;
    return t > qmax - 1.5
      ? Math.abs(t - (qmax - 1)) * Math.abs(d) + (Math.abs(d) / 2 ** 11) * qmax + slack
      : Math.abs(d) / 2 + slack;
  };
}

const worstByFormat: Record<string, number> = {};
afterAll(() => {
  if (Object.keys(worstByFormat).length > 0)
    console.log(`max |Δ| / bound per format: ${JSON.stringify(worstByFormat)}`);
});

describe.skipIf(!FIXTURES)(
  `GGUF fixtures decode within quantization bounds${FIXTURES ? "" : ` (${NO_FIXTURES})`}`,
  () => {
    for (const fam of families) {
      for (const type of ["F16", "Q8_0", "Q4_K_M"]) {
        test(`${fam} ${type}`, () => {
          const ref = openGGUF(fixture("gguf", fam, "model-F32.gguf"));
          const q = openGGUF(fixture("gguf", fam, `model-${type}.gguf`));
          expect(
            q
              .tensors()
              .map((t) => t.name)
              .sort(),
          ).toEqual(
            ref
              .tensors()
              .map((t) => t.name)
              .sort(),
          );
          const seen = new Set<string>();
          for (const t of q.tensors() as GGUFTensorInfo[]) {
            expect(t.shape).toEqual(ref.info(t.name).shape);
            const want = ref.readF32Sync(t.name);
            const got = q.readF32Sync(t.name);
            expect(got.length).toBe(want.length);
            seen.add(t.dtype);
            const n = t.format.blockElems === 1 ? 32 : t.format.blockElems;
            let worst = 0;
            for (let s = 0; s < want.length; s += n) {
              const bf = bound(t.dtype, want, s, Math.min(n, want.length - s));
              for (let i = s; i < Math.min(s + n, want.length); i++) {
                const bnd = bf(want[i]!);
                const err = Math.abs(got[i]! - want[i]!);
                if (err > bnd)
                  throw new Error(`${fam} ${type} ${t.name} (${t.dtype}) element ${i}: |Δ| ${err} > bound ${bnd}`);
                worst = Math.max(worst, bnd > 0 ? err / bnd : 0);
              }
            }
            expect(worst).toBeLessThanOrEqual(1);
            worstByFormat[t.dtype] = Math.max(worstByFormat[t.dtype] ?? 0, worst);
          }
          if (type === "Q4_K_M" && fam.endsWith("-w256")) expect([...seen].sort()).toEqual(["F32", "Q4_K", "Q6_K"]);
          ref.close();
          q.close();
        });
      }
    }
  },
);

describe.skipIf(!FIXTURES)("GGUF header facts", () => {
  test("llama3 Q4_K_M: version 3, alignment 32, row-major shapes, README tensor type counts", () => {
    const g = openGGUF(fixture("gguf", "llama3", "model-Q4_K_M.gguf"));
    expect(g.version).toBe(3);
    expect(g.alignment).toBe(32);
    expect(g.dataOffset % 32).toBe(0);
    const counts: Record<string, number> = {};
    for (const t of g.tensors()) counts[t.dtype] = (counts[t.dtype] ?? 0) + 1;
    expect(counts).toEqual({ Q8_0: 3, F32: 6, Q5_0: 12 });
    const emb = g.info("token_embd.weight");
    expect(emb.shape).toEqual([512, 64]);
    expect(emb.ggmlDims).toEqual([64, 512]);
    expect(g.get("general.architecture")).toBe("llama");
    expect(fs.statSync(fixture("gguf", "llama3", "model-Q4_K_M.gguf")).size).toBe(103712);
  });
});
