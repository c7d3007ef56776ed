// The goal: Llama-3.2-1B decode (from the released config.json, no weights) compiles on cuda
// and wgpu to at most 10 dispatches per layer plus at most 4. Compile time is measured by the bench.

import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { compile, defaultTarget } from "@poot/graph-plan";
import { buildLlama, shapeFromConfig } from "./llama.js";

function repoRoot(): string | undefined {
  for (let d = dirname(fileURLToPath(import.meta.url)); d !== dirname(d); d = dirname(d)) if (existsSync(join(d, "pnpm-workspace.yaml"))) return d;
  return undefined;
}

const root = repoRoot();
const cfg = root === undefined ? undefined : resolve(root, "../shared/fixtures/configs/llama-3.2-1b.json");
const present = cfg !== undefined && existsSync(cfg);

describe.skipIf(!present)("Llama-3.2-1B decode (skipped when ../shared/fixtures/configs/llama-3.2-1b.json is absent)", () => {
  const shape = shapeFromConfig(JSON.parse(readFileSync(cfg!, "utf8")) as Record<string, unknown>, 2048, 1);
  const graph = buildLlama(shape);
  test.each(["cuda", "wgpu"] as const)("%s: <= 10 dispatches per layer + <= 4", (kind) => {
    const p = compile(graph, defaultTarget(kind));
    const b = p.dispatchBreakdown();
    expect(b.perLayer.size).toBe(16);
    for (const n of b.perLayer.values()) expect(n).toBeLessThanOrEqual(10);
    expect(b.other).toBeLessThanOrEqual(4);
    expect(b.total).toBeLessThanOrEqual(16 * 10 + 4);
    expect(p.graph.eqns.filter((e) => e.op === "Attention").length).toBe(16);
    expect(p.declines()).toEqual([]);
  });
});
