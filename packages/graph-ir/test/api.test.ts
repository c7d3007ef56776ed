import { expect, test } from "vitest";
import { Builder, dispatchCount, evaluate, graphFromJson, graphToJsonString, printGraph } from "@poot/graph-ir";

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
  const l = [1, 2, 3, 6], m = Math.max(...l), s = l.reduce((a, v) => a + Math.exp(v - m), 0);
  for (let j = 0; j < 4; j++) expect(out[j]).toBeCloseTo(Math.exp(l[j]! - m) / s, 6);
  expect(dispatchCount(g)).toBeGreaterThan(0);
});
