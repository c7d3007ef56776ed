// Output and State copy regions of graphs compiled for the CUDA target, checked by gathering a root buffer
// whose elements are their own indices and comparing with the views' element positions computed by hand.
import { Builder, type Graph, type ValueId } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { stateCopies, viewRegions, type ByteRegion } from "./regions.js";

function compiled(g: Graph) {
  const program = compile(g, defaultTarget("cuda"));
  const aliases = program.buffers().aliases;
  return { g: program.graph, rootOf: (v: ValueId) => aliases.get(v) ?? v };
}

/** Copies the regions out of a root buffer of f32 elements equal to their index, as element indices. */
function gather(regions: readonly ByteRegion[], rootElems: number): number[] {
  const root = new Uint8Array(Float32Array.from({ length: rootElems }, (_, i) => i).buffer);
  const out = new Uint8Array(regions.reduce((a, r) => Math.max(a, r.dstOffset + r.bytes), 0));
  for (const r of regions) out.set(root.subarray(r.srcOffset, r.srcOffset + r.bytes), r.dstOffset);
  return [...new Float32Array(out.buffer)];
}

describe("viewRegions", () => {
  it("gathers the conformance movement outputs (transposes, a broadcast of a slot) from their roots", () => {
    const b = new Builder();
    const x = b.add(b.slot("Token", "x", "f32", [2, 3, 4]), b.f32(b.const("bias", "f32", [4])));
    b.output("t201", b.transpose(x, [2, 0, 1]));
    b.output("t102", b.transpose(x, [1, 0, 2]));
    b.output("bcast", b.broadcast(b.slot("Token", "col", "f32", [3, 1]), [2, 3, 4]));
    const { g, rootOf } = compiled(b.build());
    const regionsOf = (name: string) => {
      const v = g.outputs.find((o) => o.name === name)!.value;
      expect(rootOf(v)).not.toBe(v);
      return viewRegions(g, v, rootOf(v));
    };
    // x[a, b, c] sits at a*12 + b*4 + c of its root.
    const t201: number[] = [],
      t102: number[] = [],
      bcast: number[] = [];
    for (let i = 0; i < 4; i++) for (let j = 0; j < 2; j++) for (let k = 0; k < 3; k++) t201.push(j * 12 + k * 4 + i);
    for (let i = 0; i < 3; i++) for (let j = 0; j < 2; j++) for (let k = 0; k < 4; k++) t102.push(j * 12 + i * 4 + k);
    for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 4; k++) bcast.push(j);
    expect(gather(regionsOf("t201"), 24)).toEqual(t201);
    expect(gather(regionsOf("t102"), 24)).toEqual(t102);
    expect(gather(regionsOf("bcast"), 3)).toEqual(bcast);
  });

  it("is one region for an output that is its own root", () => {
    const b = new Builder();
    b.output("y", b.exp(b.slot("Token", "x", "f32", [5, 3])));
    const { g, rootOf } = compiled(b.build());
    const v = g.outputs[0]!.value;
    expect(viewRegions(g, v, rootOf(v))).toEqual([{ srcOffset: 0, dstOffset: 0, bytes: 60 }]);
  });
});

describe("stateCopies", () => {
  it("copies a transposed state_out region by region and an in-place state write not at all", () => {
    const b = new Builder();
    const s = b.state("s", "f32", [2, 3]);
    const y = b.add(b.transpose(s, [1, 0]), b.slot("Token", "x", "f32", [3, 2]));
    b.setState(s, b.transpose(y, [1, 0]));
    const cache = b.state("cache", "f32", [4, 2]);
    const zero = b.computed("i32", [], new Int32Array([0]));
    b.setState(
      cache,
      b.dynamicUpdateSlice(cache, b.slot("Token", "row", "f32", [1, 2]), [
        b.reshape(b.slot("Pos", "pos", "i32", [1]), []),
        zero,
      ]),
    );
    b.output("y", y);
    const { g, rootOf } = compiled(b.build());
    const copies = stateCopies(g, rootOf);
    expect(copies.map((c) => c.key)).toEqual(["s"]);
    // s_out[i, j] = y[j, i], and y[j, i] sits at j*2 + i of y's buffer.
    expect(gather(copies[0]!.regions, 6)).toEqual([0, 2, 4, 1, 3, 5]);
  });
});
