// The one lowering and its disk cache: every conformance case lowers for every language with one launch per
// planned dispatch and every launch argument a planned buffer; a cache entry round-trips to the same program; a
// corrupted entry is detected by its hash, reported and rebuilt (never used), and a changed target misses.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { conformanceCases } from "../conformance-cases.js";
import {
  LoweringCache,
  codeFingerprintOf,
  deserialize,
  loweringCodeFingerprint,
  loweringKey,
  serialize,
} from "./cache.js";
import { lowerProgram } from "./lower.js";
import { defaultLowering } from "./targets.js";

const LANGUAGES = ["wgsl", "ptx", "spirv", "wasm"] as const;

describe("lowerProgram", () => {
  test.each(LANGUAGES)(
    "%s: every conformance case lowers; launches = graph-plan's dispatches; buffers cover every argument",
    (language) => {
      const target = defaultLowering(language);
      for (const c of conformanceCases("f32")) {
        const p = lowerProgram(c.graph, target, { name: c.name });
        const ids = new Set(p.buffers.map((b) => b.id));
        // Split kernels (flash-decode's combine) are the only launches beyond graph-plan's list; none here.
        expect(p.launches.filter((l) => l.phase === "step").length, c.name).toBe(p.predicted.step);
        for (const l of p.launches) {
          for (const a of Object.values(l.args)) expect(ids.has(a.buffer), `${c.name} ${l.op}`).toBe(true);
          const code = p.kernels[l.kernel]!.code;
          expect(code.target).toBe(language);
          expect((code.text?.length ?? 0) + (code.binary?.length ?? 0)).toBeGreaterThan(0);
        }
        for (const o of p.outputs) expect(ids.has(o.buffer)).toBe(true);
        for (const s of p.schema.slots.keys())
          expect(
            p.buffers.some((b) => b.kind === "slot" && b.key === s) ||
              c.graph.values.every((v) => v.storage.kind !== "slot" || v.storage.key !== s),
          ).toBe(true);
      }
    },
  );

  test("a graph with State: the state_out is written in place or copied into its State buffer", () => {
    const c = conformanceCases("f32").find((x) => x.name.startsWith("state"))!;
    const p = lowerProgram(c.graph, defaultLowering("spirv"), { name: c.name });
    const states = p.buffers.filter((b) => b.kind === "state").map((b) => b.key);
    expect(states.sort()).toEqual(c.graph.states.map((s) => s.key).sort());
    for (const copy of p.stateCopies) expect(p.buffers.find((b) => b.id === copy.to)!.kind).toBe("state");
  });
});

describe("LoweringCache", () => {
  const dir = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "poot-lowering-"));
  const c = conformanceCases("bf16").find((x) => x.name.startsWith("matmul"))!;
  const target = defaultLowering("wgsl");

  test("serialize/deserialize round-trips a lowered program (maps, byte arrays, code)", () => {
    const p = lowerProgram(c.graph, defaultLowering("spirv"), { name: "m" });
    expect(deserialize(serialize(p))).toEqual(p);
  });

  test("the second lowering is a hit and equals the first; another target or name is another key", () => {
    const cache = new LoweringCache({ dir: dir(), warn: () => expect.fail("no warning expected") });
    const a = cache.lower(c.graph, target, "m");
    expect(cache.last).toBe("miss");
    const b = cache.lower(c.graph, target, "m");
    expect(cache.last).toBe("hit");
    expect(b).toEqual(a);
    expect(cache.stats()).toEqual({ hits: 1, misses: 1, rebuilt: 0 });
    expect(loweringKey(c.graph, defaultLowering("ptx"), "m")).not.toBe(a.key);
    expect(
      loweringKey(c.graph, { ...target, plan: { ...target.plan, sharedBytes: target.plan.sharedBytes / 2 } }, "m"),
    ).not.toBe(a.key);
    expect(loweringKey(c.graph, target, "other")).not.toBe(a.key);
  });

  test.each([
    ["one byte of the body flipped", (t: string) => t.slice(0, -40) + (t.at(-40) === "A" ? "B" : "A") + t.slice(-39)],
    ["truncated", (t: string) => t.slice(0, t.length / 2)],
    ["header replaced", (t: string) => `{"sha256":"0"}\n${t.slice(t.indexOf("\n") + 1)}`],
  ])("a corrupted entry (%s) is reported, deleted and rebuilt, never used", (_what, corrupt) => {
    const warnings: string[] = [];
    const cache = new LoweringCache({ dir: dir(), warn: (m) => warnings.push(m) });
    const fresh = cache.lower(c.graph, target, "m");
    const file = cache.file(fresh.key);
    fs.writeFileSync(file, corrupt(fs.readFileSync(file, "utf8")));
    const again = cache.lower(c.graph, target, "m");
    expect(cache.last).toBe("rebuilt");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("corrupted");
    expect(again).toEqual({ ...fresh, timings: again.timings });
    // The rebuilt entry is sound: the next lowering hits without a warning.
    cache.lower(c.graph, target, "m");
    expect([cache.last, warnings.length]).toEqual(["hit", 1]);
  });
});

describe("the lowering code's fingerprint (part of every key)", () => {
  test("changes when a code or asset file changes, not when a source map does; the installed packages resolve", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-fp-"));
    try {
      fs.mkdirSync(path.join(dir, "assets"));
      fs.writeFileSync(path.join(dir, "index.js"), "export const kernel = 1;");
      fs.writeFileSync(path.join(dir, "index.js.map"), "{}");
      fs.writeFileSync(path.join(dir, "assets", "k.json"), "[1]");
      const a = codeFingerprintOf([dir]);
      fs.writeFileSync(path.join(dir, "index.js.map"), "{ }");
      expect(codeFingerprintOf([dir])).toBe(a);
      fs.writeFileSync(path.join(dir, "assets", "k.json"), "[2]");
      const b = codeFingerprintOf([dir]);
      expect(b).not.toBe(a);
      fs.writeFileSync(path.join(dir, "index.js"), "export const kernel = 2;");
      expect(codeFingerprintOf([dir])).not.toBe(b);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    // The real one: stable within a process and a different hash from nothing at all.
    const fp = loweringCodeFingerprint();
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(loweringCodeFingerprint()).toBe(fp);
    expect(fp).not.toBe(codeFingerprintOf([]));
  });
});
