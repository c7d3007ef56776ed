// The interpreter executor through the executor conformance suite (public API, as a backend author uses it):
// every case's compiled Program runs in the kernel-dsl interpreter and is checked step by step against `evaluate`.
import { Builder } from "@poot/graph-ir";
import { createInterpExecutor } from "@poot/backend-reference";
import { runConformance } from "@poot/executor/conformance";
import { describe, expect, test } from "vitest";

// f32 arithmetic in the kernels against the float64 oracle: the suite's default 1e-5 relative bound.
runConformance("interp", () => createInterpExecutor(), { dtypes: ["f32", "bf16"] });

describe("interp executor on unfused primitives with literal operands", () => {
  test("Mul(x, 2.0) and Sub(3.5, x) compiled with fusion off compute the literal's result (hand-computed)", () => {
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [5]);
    b.output("twice", b.mul(x, 2.0));
    b.output("rev", b.sub(b.lit(3.5, "f32"), x));
    const exec = createInterpExecutor({ compile: { fusion: false } });
    try {
      const p = exec.stage(b.build());
      const xs = [1, -2, 0.25, 4, -0.125];
      p.writeSlot("x", xs);
      p.run();
      expect(Array.from(p.readOutput("twice"))).toEqual(xs.map((v) => v * 2));
      expect(Array.from(p.readOutput("rev"))).toEqual(xs.map((v) => 3.5 - v));
    } finally {
      exec.dispose();
    }
  });
});
