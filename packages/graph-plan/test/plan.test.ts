// Planning: kernel provenance per equation, launches, refusals naming the missing capability, chunked
// dispatches past binding and grid limits, the liveness-shared buffer arena and the slot schema.

import { describe, expect, test } from "vitest";
import { Builder, numel, storageBytes } from "@poot/graph-ir";
import { PlanError, compile, defaultTarget, makeTarget, type DeviceCaps, type Target } from "@poot/graph-plan";
import { buildLlama, TINY } from "./llama.js";

const cuda = (over: Partial<DeviceCaps>): Target => defaultTarget("cuda", over);

function refusal(fn: () => unknown): PlanError {
  try {
    fn();
  } catch (e) {
    if (e instanceof PlanError) return e;
    throw e;
  }
  throw new Error("expected a PlanError");
}

describe("plans", () => {
  const g = buildLlama(TINY);
  const p = compile(g, defaultTarget("cuda"));

  test("every equation has a plan; views dispatch nothing; provenance is synthesized or imported", () => {
    expect(p.plans().length).toBe(p.graph.eqns.length);
    for (const pl of p.plans()) {
      if (pl.kernel.provenance === "none") expect(pl.dispatches).toEqual([]);
      else expect(pl.dispatches.length).toBeGreaterThan(0);
    }
    const kinds = new Set(p.plans().flatMap((pl) => (pl.kernel.provenance === "none" ? [] : [pl.kernel.request.kind])));
    expect([...kinds].sort()).toEqual(["attention", "elementwise", "gemv", "reduction-row"]);
    // Contractions without an epilogue use the imported GEMV; those with one are synthesized with their region; k and v
    // are written by their q/k/v group's one dispatch (decision 0402).
    const gemvs = p.plans().filter((pl) => pl.op === "ContractionEpilogue");
    expect(gemvs.filter((pl) => pl.kernel.provenance === "none" && pl.kernel.reason === "grouped").length).toBe(
      2 * TINY.layers,
    );
    for (const pl of gemvs) {
      if (pl.kernel.provenance === "none") continue;
      const ep = p.graph.eqns[pl.eqn]!.params.epilogue;
      expect(pl.kernel.provenance).toBe(ep === null ? "imported" : "synthesized");
      if (pl.kernel.provenance === "imported")
        expect(pl.kernel.metadata.every((x) => Number.isInteger(x) && x >= 0 && x < 2 ** 32)).toBe(true);
    }
  });

  test("dispatch counts: at most 10 per layer plus at most 4 outside layers", () => {
    const b = p.dispatchBreakdown();
    expect([...b.perLayer.keys()].sort()).toEqual([0, 1]);
    for (const n of b.perLayer.values()) expect(n).toBeLessThanOrEqual(10);
    expect(b.other).toBeLessThanOrEqual(4);
    expect(p.unfusedDispatchCount()).toBeGreaterThan(4 * p.dispatchCount());
  });

  test("KV cache writes are in place: the cache-out values alias their State", () => {
    const aliases = p.buffers().aliases;
    const states = p.graph.states;
    expect(states.length).toBe(4);
    for (const s of states) expect(aliases.get(s.output)).toBe(s.input);
  });

  test("the arena reuses memory by liveness and never overlaps two live buffers", () => {
    const buf = p.buffers();
    expect(buf.arenaBytes).toBeLessThan(buf.unsharedBytes);
    const t = buf.transients;
    for (let i = 0; i < t.length; i++)
      for (let j = i + 1; j < t.length; j++) {
        const a = t[i]!,
          c = t[j]!;
        const timeOverlap = a.live[0] <= c.live[1] && c.live[0] <= a.live[1];
        const memOverlap = a.offset < c.offset + c.bytes && c.offset < a.offset + a.bytes;
        expect(timeOverlap && memOverlap).toBe(false);
      }
    for (const a of t) {
      const v = p.graph.values[a.value]!;
      expect(a.bytes).toBeGreaterThanOrEqual(storageBytes(v.dtype, numel(v.shape)));
    }
  });

  test("slot schema lists Token and Pos at stable aligned offsets", () => {
    expect(p.slots().map((s) => [s.key, s.slot, s.offset, s.bytes])).toEqual([
      ["ids", "Token", 0, 4],
      ["pos", "Pos", 16, 4],
    ]);
  });
});

test("equations over weights only (stacking expert weights) are prepared once at bind time, not per step", () => {
  const b = new Builder();
  const x = b.slot("Token", "x", "f32", [1, 1, 8]);
  const stacked = b.concat([b.const("e0", "f32", [1, 8, 4]), b.const("e1", "f32", [1, 8, 4])], 0);
  b.output("y", b.matmul(b.broadcast(x, [2, 1, 8]), stacked));
  const p = compile(b.build(), defaultTarget("vulkan"));
  const concat = p.plans().find((x) => x.op === "Concat")!;
  expect(concat.phase).toBe("bind");
  expect(p.bindDispatchCount()).toBe(1);
  expect(p.dispatchCount()).toBe(
    p
      .plans()
      .filter((x) => x.phase === "step")
      .reduce((a, x) => a + x.dispatches.length, 0),
  );
  expect(p.buffers().preparedBytes).toBe(2 * 8 * 4 * 4);
  expect(p.buffers().transients.some((t) => t.value === concat.out)).toBe(false);
  // The tiny Llama reads a slot everywhere: nothing is bind-time there.
  expect(compile(buildLlama(TINY), defaultTarget("cuda")).bindDispatchCount()).toBe(0);
});

describe("planner refusals name the equation and the capability", () => {
  test("attention that cannot fit a 16-key tile in shared memory", () => {
    const e = refusal(() => compile(buildLlama(TINY), cuda({ sharedBytes: 512 })));
    expect(e.code).toBe("missing-capability");
    expect(e.context).toMatchObject({
      op: "Attention",
      capability: "sharedBytes",
      needed: 2 * 16 * 16 * 4,
      available: 512,
    });
    expect(e.context.eqn).toBeTypeOf("number");
  });

  test("a kernel binding more buffers than the device allows", () => {
    const e = refusal(() => compile(buildLlama(TINY), cuda({ maxStorageBuffers: 3 })));
    expect(e.context).toMatchObject({ capability: "maxStorageBuffers", available: 3 });
  });

  test("a binding past maxBindingBytes: the head's weight is chunked, an embedding gather is refused", () => {
    const b = new Builder();
    const h = b.const("h", "f32", [1, 64]);
    b.output("logits", b.linear(h, b.const("head", "bf16", [1000, 64])));
    const p = compile(b.build(), cuda({ maxBindingBytes: 40000 }));
    const plan = p.plans().find((x) => x.op === "ContractionEpilogue")!;
    expect(plan.dispatches.length).toBe(Math.ceil((1000 * 64 * 2) / 40000));
    const starts = plan.dispatches.map((d) => d.chunk!.start);
    expect(starts).toEqual([...starts].sort((x, y) => x - y));
    const e = refusal(() => compile(buildLlama(TINY), cuda({ maxBindingBytes: 1024 })));
    expect(e.context.capability).toBe("maxBindingBytes");
  });

  test("more workgroups than the grid holds are launched in chunks", () => {
    const b = new Builder();
    b.output("y", b.exp(b.const("x", "f32", [100, 100])));
    const p = compile(b.build(), cuda({ maxGrid: [4, 2, 1] }));
    const d = p.plans()[0]!.dispatches;
    expect(d.length).toBeGreaterThan(1);
    expect(d.reduce((a, x) => a + x.chunk!.count, 0)).toBe(Math.ceil((100 * 100) / (256 * 1)));
  });
});

describe("targets", () => {
  test("offline defaults exist and validate for every kind", () => {
    for (const k of ["cpu", "wgpu", "vulkan", "cuda", "rocm", "aie"] as const)
      expect(makeTarget(defaultTarget(k)).kind).toBe(k);
    expect(defaultTarget("wgpu").caps).toMatchObject({
      maxWorkgroupSize: 256,
      sharedBytes: 16384,
      maxStorageBuffers: 16,
    });
  });

  test("bad caps are typed errors", () => {
    expect(refusal(() => defaultTarget("cuda", { sharedBytes: -1 })).code).toBe("bad-target");
    expect(refusal(() => defaultTarget("cuda", { subgroupSize: 24 })).code).toBe("bad-target");
    expect(refusal(() => defaultTarget("tpu" as never)).code).toBe("bad-target");
    expect(refusal(() => compile(buildLlama(TINY), defaultTarget("cpu"), { argmaxChunk: 0 })).code).toBe("bad-option");
  });
});
