// The eval executor against hand-written float64 loops: a bf16 linear layer, and a KV-cache-like State
// written at the Pos slot over several steps, read back lane by lane.
import { Builder, bf16BitsToF32, extendOps, f32ToBf16Bits, type OpDef } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { createEvalExecutor } from "./eval-executor.js";

describe("eval executor", () => {
  it("computes x @ W^T over bf16 weights like a float64 loop rounded to f32", () => {
    const b = new Builder();
    const x = b.slot("Token", "x", "f32", [2, 3]);
    b.output("y", b.linear(x, b.const("w", "bf16", [4, 3])));
    const w = Uint16Array.from([0.1, -0.2, 0.3, 1.5, 2.25, -3, 0.7, 0.01, 8, -1, -1, 1], (v) => f32ToBf16Bits(v));
    const exec = createEvalExecutor();
    exec.bindWeights(() => w);
    const p = exec.stage(b.build());
    const xs = [1, 2, 3, -0.5, 0.25, 4];
    p.writeSlot("x", xs);
    p.run();
    const y = p.readOutput("y");
    for (let i = 0; i < 2; i++) {
      for (let n = 0; n < 4; n++) {
        let acc = 0;
        for (let k = 0; k < 3; k++) acc += xs[i * 3 + k]! * bf16BitsToF32(w[n * 3 + k]!);
        expect(y[i * 4 + n]).toBe(Math.fround(acc));
      }
    }
    // 24 bytes of bf16 weights, plus the folded f32 transpose kept as 12 float64s.
    expect(exec.deviceBytes().weights).toBe(24 + 96);
    const plain = createEvalExecutor({ foldWeights: false });
    plain.bindWeights(() => w);
    const q = plain.stage(b.build());
    q.writeSlot("x", xs);
    q.run();
    expect(Array.from(q.readOutput("y"))).toEqual(Array.from(y));
    expect(plain.deviceBytes().weights).toBe(24);
  });

  it("keeps State device-side across steps: a cache written at Pos holds every step's row", () => {
    const b = new Builder();
    const pos = b.slot("Pos", "pos", "i32", [1]);
    const x = b.slot("Token", "x", "f32", [1, 1, 2]);
    const cache = b.state("kv", "f32", [1, 4, 2]);
    const zero = b.computed("i32", [], new Int32Array([0]));
    b.setState(cache, b.dynamicUpdateSlice(cache, x, [zero, b.reshape(pos, []), zero]));
    b.output("n", b.sum(b.reshape(pos, [1]), [0]));
    const exec = createEvalExecutor();
    const p = exec.stage(b.build());
    const st = p.createState();
    const rows = [
      [1, 2],
      [3, 4],
      [5, 6],
    ];
    rows.forEach((r, i) => {
      p.writeSlot("pos", [i]);
      p.writeSlot("x", r);
      p.run(st);
    });
    expect(Array.from(st.read("kv"))).toEqual([1, 2, 3, 4, 5, 6, 0, 0]);
    // 8 f32 elements, plus the float64 copy the last step left (read() synced the f32 buffer from it).
    expect(exec.deviceBytes().state).toBe(32 + 64);
    st.dispose();
    expect(exec.deviceBytes().state).toBe(0);
  });

  it("stages a compiled graph with its own op table (a composite op with reference semantics)", () => {
    // A stand-in for a compiler composite: out = x * x + 1, elementwise, typed like its input.
    const SquarePlusOne: OpDef = {
      arity: 1,
      category: "composite",
      view: false,
      doc: "x*x + 1",
      infer: ([x]) => x!,
      evaluate: ([x]) => Float64Array.from(x!.data as Float64Array, (v) => v * v + 1),
    };
    const ops = extendOps({ SquarePlusOne });
    const b = new Builder({ ops });
    const x = b.slot("Token", "x", "f32", [3]);
    b.output("y", b.emit("SquarePlusOne", [b.add(x, b.f32(b.const("bias", "f32", [3])))]));
    const compiled = { graph: b.build(), ops };
    for (const foldWeights of [true, false]) {
      const exec = createEvalExecutor({ foldWeights });
      exec.bindWeights(() => new Float32Array([0.5, 1, -2]));
      const p = exec.stage(compiled);
      p.writeSlot("x", [1, 2, 3]);
      p.run();
      expect(Array.from(p.readOutput("y"))).toEqual([1.5 * 1.5 + 1, 3 * 3 + 1, 1 + 1]);
    }
  });
});
