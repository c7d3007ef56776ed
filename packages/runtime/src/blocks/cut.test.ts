// The block cut on hand-built graphs shaped like a traced model: a clean two-layer graph cuts into embed, two
// layers and head whose unit graphs evaluate (graph-ir's reference evaluator, in float64) to the whole graph's
// logits; a layer that reads another layer's intermediate, or another layer's State, is refused (planted).
import { Builder, evaluate, validateGraph, type Graph, type Ref } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { findBlocks, unitGraph } from "./cut.js";

/** ids -> embed -> 2 layers (each x + tanh(x W) with a state accumulating x) -> head; `leak` plants a crossing. */
function model(leak: "none" | "value" | "state"): Graph {
  const b = new Builder();
  const ids = b.slot("Token", "ids", "i32", [2]);
  const table = b.const("embed", "f32", [5, 3]);
  let h = b.name(b.embedding(table, ids), "embed.out");
  let inner: Ref | null = null;
  const states: Ref[] = [];
  for (let i = 0; i < 2; i++) {
    h = b.scope(`layers.${i}`, () => {
      const w = b.const(`layers.${i}.w`, "f32", [3, 3]);
      const st = b.state(`layers.${i}.s`, "f32", [2, 3]);
      states.push(st);
      let a = b.tanh(b.matmul(h, w));
      if (i === 1 && leak === "value") a = b.add(a, inner!);
      if (i === 1 && leak === "state") a = b.add(a, states[0]!);
      inner ??= a;
      b.setState(st, b.add(st, h));
      return b.add(h, a, "out");
    });
  }
  b.output("logits", b.matmul(h, b.transpose(table, [1, 0])));
  return b.build();
}

const data = (n: number, seed: number) => Float64Array.from({ length: n }, (_, i) => Math.sin(seed + i * 0.7));
const consts = { embed: data(15, 1), "layers.0.w": data(9, 2), "layers.1.w": data(9, 3) };

describe("findBlocks", () => {
  it("cuts at the named residual values; unit graphs chained reproduce the whole graph (eval, float64)", () => {
    const g = model("none");
    const cut = findBlocks(g);
    expect(cut.blocks.map((b) => b.name)).toEqual(["embed", "layer 0", "layer 1", "head"]);
    expect(cut.blocks.map((b) => b.states)).toEqual([[], ["layers.0.s"], ["layers.1.s"], []]);
    // The head reads the tied embedding: both blocks carry it.
    expect(cut.blocks[3]!.consts).toEqual(["embed"]);
    expect(cut.blocks[0]!.weightBytes).toBe(60);
    const slots = { ids: new Int32Array([4, 1]) };
    const state = { "layers.0.s": data(6, 4), "layers.1.s": data(6, 5) };
    const whole = evaluate(g, { consts, slots, state });
    for (const spans of [
      [[0, 3]],
      [
        [0, 0],
        [1, 1],
        [2, 2],
        [3, 3],
      ],
      [
        [0, 1],
        [2, 3],
      ],
    ]) {
      let residual: Float64Array | null = null;
      let logits: Float64Array | null = null;
      const got: Record<string, unknown> = {};
      for (const [a, z] of spans) {
        const u = unitGraph(cut, a!, z!);
        validateGraph(u);
        const r = evaluate(u, { consts, slots: residual === null ? slots : { ...slots, residual }, state });
        Object.assign(got, r.state);
        if (r.outputs.residual !== undefined) residual = r.outputs.residual.data as Float64Array;
        else logits = r.outputs.logits!.data as Float64Array;
      }
      expect(Array.from(logits!)).toEqual(Array.from(whole.outputs.logits!.data as Float64Array));
      for (const k of Object.keys(whole.state))
        expect(Array.from((got[k] as { data: Float64Array }).data)).toEqual(
          Array.from(whole.state[k]!.data as Float64Array),
        );
    }
  });

  it("planted: a layer reading another layer's intermediate (not the residual stream) is refused", () => {
    expect(() => findBlocks(model("value"))).toThrow(/layer 1 reads .* of layer 0: only the residual stream may cross/);
  });

  it("planted: a layer reading another layer's State is refused", () => {
    expect(() => findBlocks(model("state"))).toThrow(/layer 1 reads state layers\.0\.s of layer 0/);
  });

  it("a graph without boundary names is refused with its reason", () => {
    const b = new Builder();
    b.output("logits", b.add(b.slot("Token", "ids", "i32", [2]), 1));
    expect(() => findBlocks(b.build())).toThrow(/no embed\.out value/);
  });
});
