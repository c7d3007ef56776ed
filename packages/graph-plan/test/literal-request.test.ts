// Unfused primitives with literal operands: the request carries the literal (in a one-node region), so a kernel
// synthesized from the request alone computes `Mul(x, 2.0)`, not `Mul(x)`. Checked by evaluating the request's
// region on its value inputs against a hand-computed float64 result.
import { Builder, opContext, tensorFromHost } from "@poot/graph-ir";
import { PLAN_OPS, compile, defaultTarget, evalRegion } from "@poot/graph-plan";
import { describe, expect, test } from "vitest";

describe("literal operands of unfused primitives reach the kernel request", () => {
  test("Mul(x, 2.0) and Sub(3.5, x) with fusion off: the region holds the literal; its semantics match by hand", () => {
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [2, 3]);
    b.output("twice", b.mul(x, 2.0));
    b.output("rev", b.sub(b.lit(3.5, "f32"), x));
    const p = compile(b.build(), defaultTarget("cpu"), { fusion: false });
    const xs = [1, -2, 0.25, 4, 5.5, -0.125];
    const want: Record<string, number[]> = { Mul: xs.map((v) => v * 2), Sub: xs.map((v) => 3.5 - v) };
    const planned = p.plans().filter((pl) => pl.op === "Mul" || pl.op === "Sub");
    expect(planned.map((pl) => pl.op).sort()).toEqual(["Mul", "Sub"]);
    for (const pl of planned) {
      expect(pl.kernel.provenance).toBe("synthesized");
      if (pl.kernel.provenance === "none") continue;
      const req = pl.kernel.request;
      // One value input; the literal is not an input, so it must be in the region.
      expect(req.inputs.length).toBe(1);
      expect(req.region).not.toBeNull();
      const r = evalRegion(
        req.region!,
        [tensorFromHost("f32", [2, 3], Float64Array.from(xs))!],
        PLAN_OPS,
        opContext(pl.op, [pl.out], pl.eqn),
      );
      expect(Array.from(r)).toEqual(want[pl.op]);
    }
  });
});
