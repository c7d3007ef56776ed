// The issue's goal: Llama-3.2-1B decode (from the released config.json, no weights) compiles on cuda and wgpu to
// 7 dispatches per layer plus 3 (q/k/v one group, decision 0402). Compile time is measured by the bench.

import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";
import { compile, defaultTarget } from "@poot/graph-plan";
import { buildLlama, shapeFromConfig } from "./llama.js";

const missing = needFixture("configs/llama-3.2-1b.json");
const cfg = fixture("configs/llama-3.2-1b.json");

describe.skipIf(missing !== undefined)(
  `Llama-3.2-1B decode${missing === undefined ? "" : ` (skipped: ${missing})`}`,
  () => {
    const shape = shapeFromConfig(JSON.parse(readFileSync(cfg, "utf8")) as Record<string, unknown>, 2048, 1);
    const graph = buildLlama(shape);
    // q/k/v join one dispatch (decision 0402) where the target binds the 11 buffers it needs: wgpu's default 16 do,
    // WebGPU's guaranteed 8 do not.
    test.each([
      ["cuda", defaultTarget("cuda"), 7],
      ["wgpu", defaultTarget("wgpu"), 7],
      ["wgpu with 8 storage buffers", defaultTarget("wgpu", { maxStorageBuffers: 8 }), 9],
    ] as const)("%s: %i dispatches per layer + 3", (_n, target, perLayer) => {
      const p = compile(graph, target);
      const b = p.dispatchBreakdown();
      expect(b.perLayer.size).toBe(16);
      for (const n of b.perLayer.values()) expect(n).toBe(perLayer);
      expect(b.other).toBe(3);
      expect(b.total).toBe(16 * perLayer + 3);
      expect(p.graph.eqns.filter((e) => e.op === "Attention").length).toBe(16);
      // No recognizer near-matches; where the group does not fit, k and v say so.
      expect(p.declines().filter((d) => d.pattern !== "horizontal")).toEqual([]);
      expect(
        p
          .declines()
          .filter((d) => d.pattern === "horizontal")
          .every((d) => d.check === "bindings"),
      ).toBe(true);
      expect(p.horizontalGroups().length).toBe(perLayer === 7 ? 16 : 0);
    });
  },
);
