import { describe, expect, test } from "vitest";
import { expectCode } from "../test/util.js";
import { dispatchCount, peakTransientBytes } from "./analysis.js";
import { Builder } from "./builder.js";
import { evaluate } from "./eval.js";

function chain() {
  const b = new Builder();
  const x = b.slot("Token", "x", "f32", [1, 4]);
  const a = b.exp(x); // 16 bytes, eqn 0
  const r = b.reshape(a, [4]); // view of a, eqn 1
  const m = b.mul(r, r); // 16 bytes, eqn 2
  b.output("s", b.sum(m, [0])); // 4 bytes, eqn 3
  return b.build();
}

describe("analysis", () => {
  test("dispatchCount counts non-view equations", () => {
    expect(dispatchCount(chain())).toBe(3);
    const b = new Builder();
    const x = b.const("x", "f32", [2, 3]);
    b.output("y", b.add(b.transpose(b.slice(b.broadcast(x, [2, 2, 3]), [0, 0, 0], [2, 2, 2]), [2, 1, 0]), 1));
    expect(dispatchCount(b.build())).toBe(1);
  });
  test("peakTransientBytes follows liveness through views", () => {
    // Live sets by step: {a}=16, {a}=16, {a,m}=32, {m,s}=20, {s}=4.
    expect(peakTransientBytes(chain())).toBe(32);
    const b = new Builder();
    const x = b.const("x", "bf16", [8]);
    const y = b.add(x, x); // 16 bytes bf16
    const z = b.cast(y, "f32"); // 32 bytes
    b.output("z", b.sum(z, [0])); // 4 bytes; y dead after cast
    expect(peakTransientBytes(b.build())).toBe(48);
  });
});

describe("eval bindings", () => {
  const g = () => {
    const b = new Builder();
    const w = b.const("w", "bf16", [2]);
    const s = b.slot("Pos", "p", "i32", []);
    const st = b.state("acc", "f32", [2]);
    const next = b.add(st, b.cast(w, "f32"));
    b.setState(st, next);
    b.output("pw", b.mul(b.cast(s, "f32"), b.cast(w, "f32")));
    return b.build();
  };
  test("lazy const source, bf16 rounding of bound data, raw bf16 bits, state_out", () => {
    const asked: string[] = [];
    const r = evaluate(g(), {
      consts: (key) => {
        asked.push(key);
        return [1 + 2 ** -9, 3];
      },
      slots: { p: [2] },
      state: { acc: [10, 20] },
    });
    expect(asked).toEqual(["w"]);
    expect([...r.outputs.pw!.data]).toEqual([2, 6]); // 1 + 2^-9 rounds to 1 in bf16.
    expect([...r.state.acc!.data]).toEqual([11, 23]);
    const bits = evaluate(g(), {
      consts: { w: Uint16Array.of(0x3fc0, 0xc000) },
      slots: { p: [1] },
      state: { acc: [0, 0] },
    });
    expect([...bits.outputs.pw!.data]).toEqual([1.5, -2]);
  });
  test("typed binding errors", () => {
    expectCode(() => evaluate(g(), { slots: { p: [1] }, state: { acc: [0, 0] } }), "unbound-const");
    expectCode(() => evaluate(g(), { consts: { w: [1, 2] }, state: { acc: [0, 0] } }), "unbound-slot");
    expectCode(() => evaluate(g(), { consts: { w: [1, 2] }, slots: { p: [1] } }), "unbound-state");
    const e = expectCode(
      () => evaluate(g(), { consts: { w: [1, 2, 3] }, slots: { p: [1] }, state: { acc: [0, 0] } }),
      "binding-mismatch",
    );
    expect(e.context.key).toBe("w");
  });
});
