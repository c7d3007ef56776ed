import { describe, expect, test } from "vitest";
import { expectCode } from "../test/util.js";
import type { Graph, Value } from "./graph.js";
import { extendOps } from "./ops/table.js";
import { validateGraph } from "./validate.js";

const dev = (id: number, shape: number[] = [2]): Value => ({ id, dtype: "f32", shape, storage: { kind: "device" } });
const cst = (id: number, key: string, shape: number[] = [2]): Value => ({
  id,
  dtype: "f32",
  shape,
  storage: { kind: "const", key },
});

// A well-formed base: %0 const, %1 = exp %0, %2 = add %1 %0.
const base = (): Graph => ({
  values: [cst(0, "w"), dev(1), dev(2)],
  eqns: [
    { op: "Exp", inputs: [0], params: {}, out: 1 },
    { op: "Add", inputs: [1, 0], params: {}, out: 2 },
  ],
  outputs: [{ name: "y", value: 2 }],
  states: [],
});

describe("validateGraph", () => {
  test("accepts a well-formed graph", () => expect(() => validateGraph(base())).not.toThrow());

  test("unknown-op names the equation", () => {
    const g = base();
    const e = expectCode(
      () => validateGraph({ ...g, eqns: [{ ...g.eqns[0]!, op: "Frobnicate" }, g.eqns[1]!] }),
      "unknown-op",
    );
    expect(e.context).toMatchObject({ eqn: 0, op: "Frobnicate" });
  });

  test("ssa-violation: a value defined twice, never defined, or misnumbered", () => {
    const g = base();
    const twice = expectCode(
      () => validateGraph({ ...g, eqns: [...g.eqns, { op: "Exp", inputs: [0], params: {}, out: 2 }] }),
      "ssa-violation",
    );
    expect(twice.context).toMatchObject({ eqn: 2, values: [2] });
    expectCode(() => validateGraph({ ...g, eqns: [g.eqns[0]!] }), "ssa-violation");
    expectCode(() => validateGraph({ ...g, values: [cst(0, "w"), dev(2), dev(2)] }), "ssa-violation");
  });

  test("order-violation when an input is used before its definition", () => {
    const g = base();
    const e = expectCode(() => validateGraph({ ...g, eqns: [g.eqns[1]!, g.eqns[0]!] }), "order-violation");
    expect(e.context).toMatchObject({ eqn: 0, op: "Add", values: [1, 2] });
  });

  test("shape-mismatch / dtype-mismatch when a declared output type disagrees with the op", () => {
    const g = base();
    expectCode(() => validateGraph({ ...g, values: [cst(0, "w"), dev(1), dev(2, [3])] }), "shape-mismatch");
    expectCode(
      () => validateGraph({ ...g, values: [cst(0, "w"), dev(1), { ...dev(2), dtype: "bf16" }] }),
      "dtype-mismatch",
    );
  });

  test("bad-arity, unknown-value, storage-violation", () => {
    const g = base();
    expectCode(
      () => validateGraph({ ...g, eqns: [{ op: "Exp", inputs: [0, 0], params: {}, out: 1 }, g.eqns[1]!] }),
      "bad-arity",
    );
    expectCode(
      () => validateGraph({ ...g, eqns: [{ op: "Exp", inputs: [7], params: {}, out: 1 }, g.eqns[1]!] }),
      "unknown-value",
    );
    expectCode(() => validateGraph({ ...g, values: [cst(0, "w"), cst(1, "w2"), dev(2)] }), "storage-violation");
    expectCode(() => validateGraph({ ...g, values: [cst(0, "w"), dev(1), dev(2), cst(3, "w")] }), "storage-violation");
    expectCode(
      () =>
        validateGraph({
          ...g,
          values: [
            ...g.values,
            { id: 3, dtype: "f32", shape: [2], storage: { kind: "computed", data: new Float32Array(3) } },
          ],
        }),
      "storage-violation",
    );
    expectCode(
      () =>
        validateGraph({
          ...g,
          values: [
            ...g.values,
            { id: 3, dtype: "bf16", shape: [2], storage: { kind: "computed", data: new Float32Array(2) } },
          ],
        }),
      "storage-violation",
    );
  });

  test("state pairing: unpaired, mismatched type, wrong key", () => {
    const st: Value = { id: 3, dtype: "f32", shape: [2], storage: { kind: "state", key: "kv" } };
    const g = base();
    expectCode(() => validateGraph({ ...g, values: [...g.values, st] }), "state-pairing");
    expectCode(
      () =>
        validateGraph({
          ...g,
          values: [...g.values, { ...st, shape: [3] }],
          states: [{ key: "kv", input: 3, output: 2 }],
        }),
      "state-pairing",
    );
    expectCode(
      () => validateGraph({ ...g, values: [...g.values, st], states: [{ key: "kx", input: 3, output: 2 }] }),
      "state-pairing",
    );
    expect(() =>
      validateGraph({ ...g, values: [...g.values, st], states: [{ key: "kv", input: 3, output: 2 }] }),
    ).not.toThrow();
  });

  test("composite ops register through an extended table", () => {
    const ops = extendOps({
      Square: {
        arity: 1,
        category: "composite",
        view: false,
        doc: "x*x",
        infer: ([x]) => x!,
        evaluate: ([x]) => Float64Array.from(x!.data, (v) => v * v),
      },
    });
    const g: Graph = { ...base(), eqns: [{ op: "Square", inputs: [0], params: {}, out: 1 }, base().eqns[1]!] };
    expectCode(() => validateGraph(g), "unknown-op");
    expect(() => validateGraph(g, { ops })).not.toThrow();
    expectCode(() => extendOps({ Add: ops.Square! }), "duplicate-op");
  });
});
