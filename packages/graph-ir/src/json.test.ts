import { describe, expect, test } from "vitest";
import { expectCode } from "../test/util.js";
import { Builder } from "./builder.js";
import { f32ToF16Bits } from "./convert.js";
import { evaluate } from "./eval.js";
import { GRAPH_JSON_VERSION, graphFromJson, graphToJson, graphToJsonString } from "./json.js";
import type { PackedFormat } from "./packed.js";
import { printGraph } from "./printer.js";

const Q: PackedFormat = {
  name: "u8x2",
  blockSize: 2,
  bytesPerBlock: 2,
  decode: { op: "load", type: "u8", offset: { op: "i" } },
};

/** A graph touching every storage class, packed data, names and awkward literals. */
function sample() {
  const b = new Builder();
  const w = b.const("w", "f32", [3, 2]);
  const pos = b.slot("Pos", "pos", "i32", []);
  const kv = b.state("kv", "f32", [4, 3]);
  const table = b.computed("f16", [3], Uint16Array.from([1, -2, 0.5], f32ToF16Bits), "table");
  const pk = b.computed({ packed: Q }, [1, 4], Uint8Array.from([1, 2, 3, 4]), "packed");
  const y = b.scope("layers.0", () => b.add(b.reshape(b.sum(w, [1]), [1, 3]), b.cast(table, "f32"), "y"));
  b.setState(kv, b.dynamicUpdateSlice(kv, y, [pos, b.computed("i32", [], Int32Array.of(0))]));
  b.output("y", y);
  b.output("masked", b.select(b.cmp("Gt", y, 1), y, -Infinity));
  b.output("negzero", b.mul(y, b.lit(-0, "f32")));
  b.output("nan", b.add(y, b.lit(NaN, "f32")));
  b.output("pk", b.decodePacked(pk));
  return b.build();
}

describe("printer", () => {
  test("golden text for a small graph", () => {
    const b = new Builder();
    const x = b.slot("Token", "x", "f32", [1, 4]);
    const w = b.const("w", "f32", [4, 4], "layers.0.w");
    const h = b.matmul(x, w, "layers.0.h");
    b.output("out", b.reduce("sum", b.mul(h, 2), [1], true));
    expect(printGraph(b.build())).toBe(
      [
        'slot %0:f32[1,4] Token "x"  # x',
        'const %1:f32[4,4] "w"  # layers.0.w',
        "",
        "%2:f32[1,4] = matmul %0 %1  # layers.0.h",
        "%3:f32[1,4] = mul %2 2:f32",
        "%4:f32[1,1] = reduce[kind=sum axes=[1] keepdim=true] %3",
        "",
        "out out = %4",
        "",
      ].join("\n"),
    );
  });
});

describe("JSON", () => {
  test("round-trips losslessly: same printing, same eval results", () => {
    const g = sample();
    const json = graphToJsonString(g);
    const g2 = graphFromJson(json);
    expect(printGraph(g2)).toBe(printGraph(g));
    expect(graphToJsonString(g2)).toBe(json);
    const bind = { consts: { w: [1, 2, 3, 4, 5, 6] }, slots: { pos: [2] }, state: { kv: new Array(12).fill(0.25) } };
    const r1 = evaluate(g, bind),
      r2 = evaluate(g2, bind);
    for (const k of Object.keys(r1.outputs)) expect([...r2.outputs[k]!.data]).toEqual([...r1.outputs[k]!.data]);
    expect([...r2.state.kv!.data]).toEqual([...r1.state.kv!.data]);
    // Hand check: y = row sums [3,7,11] + [1,-2,0.5]; the KV row at pos 2 holds it.
    expect([...r1.outputs.y!.data]).toEqual([4, 5, 11.5]);
    expect([...r1.state.kv!.data].slice(6, 9)).toEqual([4, 5, 11.5]);
    expect(Object.is(r2.outputs.negzero!.data[0], -0)).toBe(true);
    expect(r2.outputs.nan!.data[0]).toBeNaN();
    expect([...r2.outputs.masked!.data]).toEqual([4, 5, 11.5]);
    expect([...r2.outputs.pk!.data]).toEqual([1, 2, 3, 4]);
  });

  test("typed parse errors", () => {
    const j = graphToJson(sample()) as Record<string, unknown>;
    expectCode(() => graphFromJson({ ...j, version: 2 }), "json-version");
    expectCode(() => graphFromJson("{not json"), "json-parse");
    expectCode(() => graphFromJson({ ...j, values: "nope" }), "json-parse");
    expectCode(() => graphFromJson({ ...j, formats: {} }), "json-parse");
    const e = expectCode(
      () => graphFromJson({ ...j, eqns: [{ op: "Add", inputs: [0, { lit: "x", dtype: "f32" }], out: 1 }] }),
      "json-parse",
    );
    expect(e.context.path).toBe("$.eqns[0].inputs[1].lit");
    expect(GRAPH_JSON_VERSION).toBe(1);
    const g = sample();
    const bad = {
      ...g,
      eqns: g.eqns.map((e, k) => (k === 0 ? { ...e, params: { ...e.params, extra: Infinity } } : e)),
    };
    expect(expectCode(() => graphToJson(bad), "bad-param").context.eqn).toBe(0);
  });
});
