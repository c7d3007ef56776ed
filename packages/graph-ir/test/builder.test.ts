import { describe, expect, test } from "vitest";
import { Builder, evaluate, type PackedFormat, type Ref } from "@poot/graph-ir";
import { expectCode, rand } from "./util.js";

/** Evaluates one helper output with all Consts bound from `data`. */
function run(build: (b: Builder) => Ref, data: Record<string, number[]>): Float64Array {
  const b = new Builder();
  b.output("out", build(b));
  return evaluate(b.build(), { consts: data }).outputs.out!.data as Float64Array;
}

function close(got: ArrayLike<number>, want: readonly number[], tol = 2e-6): void {
  expect(got.length).toBe(want.length);
  want.forEach((w, k) => {
    if (Math.abs(got[k]! - w) > tol * Math.max(1, Math.abs(w))) expect([k, got[k]]).toEqual([k, w]);
  });
}

const T = 3,
  D = 8;
const x = rand(T * D, 21),
  w = rand(D, 22).map((v) => Math.fround(v + 1)),
  bias = rand(D, 23);

describe("Builder helpers against float64 loops", () => {
  test("rmsNorm", () => {
    const want: number[] = [];
    for (let t = 0; t < T; t++) {
      let ss = 0;
      for (let d = 0; d < D; d++) ss += x[t * D + d]! ** 2;
      const inv = 1 / Math.sqrt(ss / D + 1e-5);
      for (let d = 0; d < D; d++) want.push(x[t * D + d]! * inv * w[d]!);
    }
    close(
      run((b) => b.rmsNorm(b.const("x", "f32", [T, D]), b.const("w", "f32", [D]), 1e-5), { x, w }),
      want,
    );
  });

  test("layerNorm", () => {
    const want: number[] = [];
    for (let t = 0; t < T; t++) {
      const row = x.slice(t * D, t * D + D);
      const mean = row.reduce((a, v) => a + v, 0) / D;
      const variance = row.reduce((a, v) => a + (v - mean) ** 2, 0) / D;
      row.forEach((v, d) => want.push(((v - mean) / Math.sqrt(variance + 1e-5)) * w[d]! + bias[d]!));
    }
    close(
      run(
        (b) => b.layerNorm(b.const("x", "f32", [T, D]), b.const("w", "f32", [D]), b.const("bias", "f32", [D]), 1e-5),
        { x, w, bias },
      ),
      want,
    );
  });

  test("softmax (max-subtracted) survives large logits", () => {
    const big = x.map((v) => v * 1000);
    const want: number[] = [];
    for (let t = 0; t < T; t++) {
      const row = big.slice(t * D, t * D + D);
      const m = Math.max(...row);
      const z = row.reduce((a, v) => a + Math.exp(v - m), 0);
      row.forEach((v) => want.push(Math.exp(v - m) / z));
    }
    close(
      run((b) => b.softmax(b.const("x", "f32", [T, D])), { x: big }),
      want,
    );
  });

  test("silu, gelu (erf and tanh), swiglu, geglu", () => {
    const silu = (v: number): number => v / (1 + Math.exp(-v));
    const geluErf = (v: number): number => 0.5 * v * (1 + erfRef(v / Math.SQRT2));
    const geluTanh = (v: number): number => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));
    const xs = x.map((v) => v * 3);
    close(
      run((b) => b.silu(b.const("x", "f32", [T, D])), { x: xs }),
      xs.map(silu),
    );
    close(
      run((b) => b.gelu(b.const("x", "f32", [T, D]), "erf"), { x: xs }),
      xs.map(geluErf),
    );
    close(
      run((b) => b.gelu(b.const("x", "f32", [T, D]), "tanh"), { x: xs }),
      xs.map(geluTanh),
    );
    close(
      run((b) => b.swiglu(b.const("g", "f32", [T, D]), b.const("u", "f32", [T, D])), { g: xs, u: x }),
      xs.map((v, k) => silu(v) * x[k]!),
    );
    close(
      run((b) => b.geglu(b.const("g", "f32", [T, D]), b.const("u", "f32", [T, D]), "tanh"), { g: xs, u: x }),
      xs.map((v, k) => geluTanh(v) * x[k]!),
    );
  });

  test("ropeRotateHalf with per-position cos/sin", () => {
    const pos = [0, 1, 5];
    const cos: number[] = [],
      sin: number[] = [],
      want: number[] = [];
    for (let t = 0; t < T; t++)
      for (let d = 0; d < D; d++) {
        const theta = pos[t]! * 10000 ** (-(2 * (d % (D / 2))) / D);
        cos.push(Math.fround(Math.cos(theta)));
        sin.push(Math.fround(Math.sin(theta)));
      }
    for (let t = 0; t < T; t++)
      for (let d = 0; d < D; d++) {
        const h = D / 2;
        const rot = d < h ? -x[t * D + d + h]! : x[t * D + d - h]!;
        want.push(x[t * D + d]! * cos[t * D + d]! + rot * sin[t * D + d]!);
      }
    close(
      run(
        (b) =>
          b.ropeRotateHalf(b.const("x", "f32", [T, D]), b.const("cos", "f32", [T, D]), b.const("sin", "f32", [T, D])),
        { x, cos, sin },
      ),
      want,
    );
  });

  test("ropeInterleaved: GPT-J pairs (2i, 2i+1) at frequency i, per-position cos/sin", () => {
    const pos = [0, 1, 5];
    const cos: number[] = [],
      sin: number[] = [],
      want: number[] = [];
    for (let t = 0; t < T; t++)
      for (let d = 0; d < D; d++) {
        const theta = pos[t]! * 10000 ** (-(2 * Math.floor(d / 2)) / D);
        cos.push(Math.fround(Math.cos(theta)));
        sin.push(Math.fround(Math.sin(theta)));
      }
    for (let t = 0; t < T; t++)
      for (let i = 0; i < D / 2; i++) {
        const k = t * D + 2 * i;
        const x0 = x[k]!,
          x1 = x[k + 1]!;
        want.push(x0 * cos[k]! - x1 * sin[k]!, x1 * cos[k + 1]! + x0 * sin[k + 1]!);
      }
    close(
      run(
        (b) =>
          b.ropeInterleaved(b.const("x", "f32", [T, D]), b.const("cos", "f32", [T, D]), b.const("sin", "f32", [T, D])),
        { x, cos, sin },
      ),
      want,
    );
  });

  test("attentionMasked with GQA (repeatKv) and a causal additive or select mask", () => {
    const H = 4,
      HKV = 2,
      Tq = 3,
      Tk = 3,
      Dh = 4;
    const q = rand(H * Tq * Dh, 31),
      k = rand(HKV * Tk * Dh, 32),
      v = rand(HKV * Tk * Dh, 33);
    const scale = 1 / Math.sqrt(Dh);
    const want: number[] = [];
    for (let h = 0; h < H; h++) {
      const kvh = Math.floor(h / (H / HKV));
      for (let i = 0; i < Tq; i++) {
        const s: number[] = [];
        for (let j = 0; j <= i; j++) {
          let dot = 0;
          for (let d = 0; d < Dh; d++) dot += q[(h * Tq + i) * Dh + d]! * k[(kvh * Tk + j) * Dh + d]!;
          s.push(dot * scale);
        }
        const m = Math.max(...s);
        const z = s.reduce((a, e) => a + Math.exp(e - m), 0);
        for (let d = 0; d < Dh; d++)
          want.push(s.reduce((a, e, j) => a + (Math.exp(e - m) / z) * v[(kvh * Tk + j) * Dh + d]!, 0));
      }
    }
    const additive = Array.from({ length: Tq * Tk }, (_, n) => (n % Tk <= Math.floor(n / Tk) ? 0 : -Infinity));
    const keep = additive.map((a) => (a === 0 ? 1 : 0));
    for (const mode of ["additive", "select"] as const) {
      const b = new Builder();
      const qq = b.const("q", "f32", [H, Tq, Dh]);
      const kk = b.repeatKv(b.const("k", "f32", [HKV, Tk, Dh]), H / HKV, 0);
      const vv = b.repeatKv(b.const("v", "f32", [HKV, Tk, Dh]), H / HKV, 0);
      const mask =
        mode === "additive" ? { additive: b.const("m", "f32", [Tq, Tk]) } : { select: b.const("m", "bool", [Tq, Tk]) };
      b.output("out", b.attentionMasked(qq, kk, vv, { scale, mask }));
      const r = evaluate(b.build(), { consts: { q, k, v, m: mode === "additive" ? additive : keep } });
      close(r.outputs.out!.data, want);
    }
  });

  test("linear: dense HF [N, K] and packed weights, plus embedding", () => {
    const N = 3,
      K = 4;
    const wt = rand(N * K, 41),
      xb = rand(2 * K, 42),
      bb = rand(N, 43);
    const want: number[] = [];
    for (let t = 0; t < 2; t++)
      for (let n = 0; n < N; n++) {
        let acc = bb[n]!;
        for (let kk = 0; kk < K; kk++) acc += xb[t * K + kk]! * wt[n * K + kk]!;
        want.push(acc);
      }
    close(
      run((b) => b.linear(b.const("x", "f32", [2, K]), b.const("w", "f32", [N, K]), b.const("b", "f32", [N])), {
        x: xb,
        w: wt,
        b: bb,
      }),
      want,
    );
    // Packed: one byte per element, value = byte - 128, blocks of 2.
    const P: PackedFormat = {
      name: "s8",
      blockSize: 2,
      bytesPerBlock: 2,
      decode: { op: "sub", a: { op: "load", type: "u8", offset: { op: "i" } }, b: { op: "const", value: 128 } },
    };
    const bytes = Uint8Array.from({ length: N * K }, (_, n) => (n * 29) % 256);
    const wq = [...bytes].map((v) => v - 128);
    const b = new Builder();
    const wp = b.const("w", { packed: P }, [N, K]);
    b.output("y", b.linear(b.const("x", "f32", [K]), wp));
    b.output("e", b.embedding(wp, b.const("ids", "i32", [2])));
    const r = evaluate(b.build(), { consts: { w: bytes, x: xb.slice(0, K), ids: [2, 0] } });
    close(
      r.outputs.y!.data,
      [0, 1, 2].map((n) => [0, 1, 2, 3].reduce((a, kk) => a + xb[kk]! * wq[n * K + kk]!, 0)),
    );
    expect([...r.outputs.e!.data]).toEqual([...wq.slice(8, 12), ...wq.slice(0, 4)]);
  });
});

describe("Builder typed errors at trace time", () => {
  test("bad shapes, unknown ops, literals without a dtype source", () => {
    const b = new Builder();
    const a = b.const("a", "f32", [2, 3]);
    const e = expectCode(() => b.add(a, b.const("c", "f32", [4])), "shape-mismatch");
    expect(e.context.op).toBe("Add");
    expectCode(() => b.emit("Nope", [a]), "unknown-op");
    expectCode(() => b.emit("Add", [1, 2]), "dtype-mismatch");
    expectCode(() => b.matmul(a, a), "shape-mismatch");
    expectCode(() => b.ropeRotateHalf(b.const("odd", "f32", [3]), a, a), "shape-mismatch");
    expectCode(() => b.ropeInterleaved(b.const("odd2", "f32", [3]), a, a), "shape-mismatch");
    expectCode(() => b.output("x", a) ?? b.output("x", a), "storage-violation");
  });
});

// Independent erf oracle: composite Simpson integration of 2/sqrt(pi) * exp(-t^2) on [0, x].
function erfRef(x: number): number {
  const n = 2000,
    h = x / n;
  let s = 1 + Math.exp(-x * x);
  for (let i = 1; i < n; i++) s += (i % 2 === 1 ? 4 : 2) * Math.exp(-((i * h) ** 2));
  return ((s * h) / 3) * (2 / Math.sqrt(Math.PI));
}
