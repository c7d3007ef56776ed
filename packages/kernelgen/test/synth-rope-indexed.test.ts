// Synthesized RoPE (rotate-half and interleaved, f32 and bf16 steps, broadcast cos/sin tables) and segmented
// IndexedMatMul (routed experts, with an epilogue) in the interpreter, against graph-ir primitives in float64.

import { Builder, evaluate, f32ToBf16Bits } from "@poot/graph-ir";
import type { Ref } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { synthesizeIndexedMatMul, synthesizeRope } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { expectClose, expectExact, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

const CAPS: SynthCaps = { maxWorkgroup: 64, sharedBytes: 8192 };
const SG: SynthCaps = { maxWorkgroup: 128, sharedBytes: 8192, subgroupSize: 16 };

describe("synthesized RoPE", () => {
  for (const style of ["half", "interleaved"] as const) {
    for (const dtype of ["f32", "bf16"] as const) {
      for (const [T, H, D] of [
        [1, 1, 2],
        [3, 4, 8],
        [5, 2, 6],
      ] as const) {
        it(`${style}, ${dtype} steps, x [${T}, ${H}, ${D}], cos/sin [${T}, 1, ${D}]`, () => {
          const r = rng(T * 100 + H * 10 + D);
          const x = randF32(r, T * H * D, 2);
          const cos = randF32(r, T * D),
            sin = randF32(r, T * D);
          const s = synthesizeRope(
            { name: "rope", shape: [T, H, D], style, dtype, cos: { shape: [T, 1, D] }, sin: { shape: [T, 1, D] } },
            CAPS,
          );
          const out = poisoned(s.kernel, "out", T * H * D);
          run(s.kernel, { grid: [...s.grid], buffers: { x, cos, sin, out } });
          const g = new Builder();
          const xr = g.const("x", "f32", [T, H, D]);
          const c = g.const("cos", "f32", [T, 1, D]),
            sn = g.const("sin", "f32", [T, 1, D]);
          let rot: Ref;
          if (style === "half") {
            rot = g.concat([g.neg(g.slice(xr, [0, 0, D / 2], [T, H, D])), g.slice(xr, [0, 0, 0], [T, H, D / 2])], 2);
          } else {
            const pairs = g.reshape(xr, [T, H, D / 2, 2]);
            const even = g.slice(pairs, [0, 0, 0, 0], [T, H, D / 2, 1]),
              odd = g.slice(pairs, [0, 0, 0, 1], [T, H, D / 2, 2]);
            rot = g.reshape(g.concat([g.neg(odd), even], 3), [T, H, D]);
          }
          const step = (v: Ref): Ref => (dtype === "f32" ? v : g.cast(v, "bf16"));
          g.output("y", step(g.add(g.f32(step(g.mul(xr, c))), g.f32(step(g.mul(rot, sn))))));
          const want = evaluate(g.build(), { consts: { x, cos, sin } }).outputs.y!.data;
          if (dtype === "f32") expectExact(out as Float32Array, want);
          else
            expectExact(
              out as Uint16Array,
              Array.from(want, (v) => f32ToBf16Bits(v)),
            );
        });
      }
    }
  }

  it("refuses an odd last dim", () => {
    expect(() =>
      synthesizeRope({ name: "r", shape: [2, 3], style: "half", cos: { shape: [3] }, sin: { shape: [3] } }, CAPS),
    ).toThrow(expect.objectContaining({ code: "bad_shape" }));
  });
});

describe("synthesized segmented IndexedMatMul", () => {
  const cases: [number, number, number, number, number, SynthCaps][] = [
    [1, 1, 1, 1, 1, CAPS],
    [3, 2, 20, 9, 4, SG],
    [4, 2, 33, 17, 3, CAPS],
  ];
  for (const [T, S, K, N, E, caps] of cases) {
    it(`T=${T} S=${S} K=${K} N=${N} E=${E} (${caps.subgroupSize === undefined ? "tree" : "subgroups"}), bf16 experts, routing with repeats`, () => {
      const r = rng(T * S * K + N + E);
      const x = randF32(r, T * K);
      const w = randBf16(r, E * N * K);
      const ids = Int32Array.from({ length: T * S }, () => Math.floor(r() * E));
      const gate = randF32(r, T * S * N);
      const epilogue = {
        inputs: [{ name: "gate", dtype: "f32" as const, kind: "element" as const }],
        nodes: [
          { op: "leaf" as const, name: "acc" },
          { op: "leaf" as const, name: "gate" },
          { op: "binary" as const, fn: "mul" as const, a: 0, b: 1 },
        ],
        node: 2,
      };
      const s = synthesizeIndexedMatMul({ name: "imm", T, S, K, N, experts: E, wDtype: "bf16", epilogue }, caps);
      const out = poisoned(s.kernel, "out", T * S * N);
      run(s.kernel, {
        grid: [...s.grid],
        buffers: { x, w, ids, gate, out },
        ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
      });
      // Oracle: gather each slot's token row and expert matrix, batched MatMul, times the gate.
      const g = new Builder();
      const tok = Int32Array.from({ length: T * S }, (_, i) => Math.floor(i / S));
      const xs = g.reshape(g.gather(g.const("x", "f32", [T, K]), g.const("tok", "i32", [T * S]), 0), [T * S, 1, K]);
      const ws = g.transpose(
        g.f32(g.gather(g.const("w", "bf16", [E, N, K]), g.const("ids", "i32", [T * S]), 0)),
        [0, 2, 1],
      );
      const acc = g.reshape(g.matmul(xs, ws), [T, S, N]);
      const gt = g.const("gate", "f32", [T, S, N]);
      g.output("y", g.mul(acc, gt));
      g.output("s", g.unary("Abs", g.mul(g.reshape(g.matmul(g.unary("Abs", xs), g.unary("Abs", ws)), [T, S, N]), gt)));
      const o = evaluate(g.build(), { consts: { x, w, ids, tok, gate } }).outputs;
      expectClose(out as Float32Array, o.y!.data, o.s!.data);
    });
  }
});
