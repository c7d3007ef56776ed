// Which graphs a bySize fusion policy (CUDA's) compiles with block-GEMV epilogues ("any", at most 8 tokens a step) and which keep
// own-element epilogues for the tiled GEMM: decided by the Token slot's size.
import { Builder } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { stepTokens } from "./lower.js";

function graph(tokens: number | null) {
  const b = new Builder();
  const x = tokens === null ? b.slot("Pos", "pos", "i32", [1]) : b.slot("Token", "ids", "i32", [tokens]);
  b.output("y", b.add(x, x));
  return b.build();
}

describe("stepTokens", () => {
  it("counts the Token slot's elements (decode 1, prefill 512) and is undefined without one", () => {
    expect(stepTokens(graph(1))).toBe(1);
    expect(stepTokens(graph(512))).toBe(512);
    expect(stepTokens(graph(null))).toBeUndefined();
  });
});
