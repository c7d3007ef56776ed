import { expect, test } from "vitest";
import {
  Builder,
  dispatchCount,
  evaluate,
  extendOps,
  graphFromJson,
  graphToJsonString,
  printGraph,
} from "@poot/graph-ir";

test("build, print, round-trip and evaluate a tiny graph", () => {
  const b = new Builder();
  const x = b.slot("Token", "x", "f32", [2, 3]);
  const w = b.const("w", "f32", [4, 3]);
  const y = b.linear(x, w, undefined, "y");
  b.output("y", b.softmax(y));
  const g = b.build();
  const text = printGraph(g);
  const g2 = graphFromJson(graphToJsonString(g));
  expect(printGraph(g2)).toBe(text);
  const r = evaluate(g2, { slots: { x: [1, 2, 3, 4, 5, 6] }, consts: { w: [1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1] } });
  const out = r.outputs.y!.data;
  // Row 0 logits [1,2,3,6]: softmax by hand in float64.
  const l = [1, 2, 3, 6],
    m = Math.max(...l),
    s = l.reduce((a, v) => a + Math.exp(v - m), 0);
  for (let j = 0; j < 4; j++) expect(out[j]).toBeCloseTo(Math.exp(l[j]! - m) / s, 6);
  expect(dispatchCount(g)).toBeGreaterThan(0);
});

test("the README example runs and matches a hand computation", () => {
  const b = new Builder();
  const ids = b.slot("Token", "ids", "i32", [3]);
  const emb = b.const("embed", "bf16", [16, 8]);
  const x = b.embedding(emb, ids, "x");
  const h = b.rmsNorm(x, b.const("norm", "f32", [8]), 1e-5, "h");
  b.output("logits", b.linear(h, emb, undefined, "logits"));
  const graph = b.build();
  expect(printGraph(graph)).toContain("# logits");
  const embed = new Float32Array(128).map((_, i) => Math.sin(i));
  const { outputs } = evaluate(graph, {
    consts: { embed, norm: new Float32Array(8).fill(1) },
    slots: { ids: [1, 4, 9] },
  });
  expect(outputs.logits!.shape).toEqual([3, 16]);
  // Hand: bf16-rounded table, rmsNorm of row 4, dot with row 7.
  const bf = (v: number): number => {
    const u = new Uint32Array(new Float32Array([v]).buffer)[0]!;
    const r = (u + 0x7fff + ((u >>> 16) & 1)) & 0xffff0000;
    return new Float32Array(new Uint32Array([r]).buffer)[0]!;
  };
  const row = (r: number): number[] => Array.from({ length: 8 }, (_, d) => bf(embed[r * 8 + d]!));
  const x4 = row(4);
  const inv = 1 / Math.sqrt(x4.reduce((a, v) => a + v * v, 0) / 8 + 1e-5);
  const want = x4.reduce((a, v, d) => a + v * inv * row(7)[d]!, 0);
  expect(outputs.logits!.data[1 * 16 + 7]).toBeCloseTo(want, 5);
});

test("a composite op registers through extendOps and flows through Builder, eval and analysis", () => {
  const ops = extendOps({
    // A toy fused row op: x * rsqrt(mean(x^2) + 1e-6) over the last axis, the chain rmsNorm emits.
    FusedRmsNorm: {
      arity: 1,
      category: "composite",
      view: false,
      doc: "rmsNorm without weight",
      infer: ([x], _p, ctx) => (x!.dtype === "f32" ? x! : ctx.fail("dtype-mismatch", "f32 only")),
      evaluate: ([x]) => {
        const d = x!.shape[x!.shape.length - 1]!;
        const out = new Float64Array(x!.data.length);
        for (let r = 0; r < out.length / d; r++) {
          let ss = 0;
          for (let j = 0; j < d; j++) ss += x!.data[r * d + j]! ** 2;
          for (let j = 0; j < d; j++) out[r * d + j] = x!.data[r * d + j]! / Math.sqrt(ss / d + 1e-6);
        }
        return out;
      },
    },
  });
  const b = new Builder({ ops });
  const x = b.const("x", "f32", [2, 2]);
  const y = b.scope("layers.0", () => b.emit("FusedRmsNorm", [x], {}, "norm"));
  b.output("y", b.add(y, 1));
  const g = b.build();
  expect(printGraph(g)).toContain("%1:f32[2,2] = fusedrmsnorm %0  # layers.0.norm");
  expect(dispatchCount(g, { ops })).toBe(2);
  const r = evaluate(g, { consts: { x: [3, 4, 0, 2] } }, { ops });
  const s0 = Math.sqrt(12.5 + 1e-6),
    s1 = Math.sqrt(2 + 1e-6);
  expect([...r.outputs.y!.data]).toEqual([3 / s0 + 1, 4 / s0 + 1, 1, 2 / s1 + 1].map(Math.fround));
  expect(() => evaluate(g, { consts: { x: [3, 4, 0, 2] } })).toThrow(/unknown-op/);
});
