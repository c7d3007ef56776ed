// `poot compile` and the compiler end to end on real traced graphs: for every fixture family and every
// target kind, the optimized graph's logits equal the primitive graph's under eval (max|Δ|/max|ref| <= 1e-6), q/k/v
// groups (decision 0402) included;
// Llama-3.2-1B decode from its released config.json is 7 dispatches per layer + 3.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { evaluate, type Graph, type Tensor } from "@poot/graph-ir";
import { BACKEND_KINDS, PLAN_OPS, compile, defaultTarget } from "@poot/graph-plan";
import { LoadedModel, checkpointConsts, openCheckpoint, openSafetensors } from "@poot/models";
import { poot } from "./run-poot.js";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf", "gguf", "configs");
const FIX = fixture();
const HAVE = NO_FIXTURES === undefined;

function rel(a: Tensor, ref: Tensor): number {
  let d = 0,
    m = 0;
  for (let i = 0; i < ref.data.length; i++) {
    d = Math.max(d, Math.abs(a.data[i]! - ref.data[i]!));
    m = Math.max(m, Math.abs(ref.data[i]!));
  }
  return d / m;
}

describe.skipIf(!HAVE)(`compiled graphs of the fixture families${HAVE ? "" : ` (skipped: ${NO_FIXTURES})`}`, () => {
  for (const fam of ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"]) {
    const dir = path.join(FIX, "hf", fam);
    test(`${fam}: prefill and decode on every target kind evaluate equal to the primitive graph`, () => {
      const ids = (JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[] })
        .prompt_ids;
      const m = LoadedModel.open(dir);
      const ckpt = openSafetensors(dir);
      try {
        const consts = checkpointConsts(ckpt);
        const prefill = m.graph({ kind: "prefill", tokens: ids.length });
        const decode = m.graph({ kind: "decode", context: 32 });
        const batched = m.graph({ kind: "batched-decode", batch: 3, context: 16 });
        const cache = (g: Graph): Record<string, Float32Array> =>
          Object.fromEntries(
            g.states.map((s) => [
              s.key,
              Float32Array.from(
                { length: g.values[s.input]!.shape.reduce((a, b) => a * b, 1) },
                (_, i) => Math.sin(i) / 4,
              ),
            ]),
          );
        const runs: [Graph, Parameters<typeof evaluate>[1]][] = [
          [prefill, { consts, slots: { ids: Int32Array.from(ids) } }],
          // Decode at position 3 over a cache whose rows hold arbitrary values (the mask must hide rows > 3).
          [decode, { consts, slots: { ids: [ids[3]!], pos: [3] }, state: cache(decode) }],
          // Three sequences at different positions: each writes its own cache rows in place.
          [batched, { consts, slots: { ids: [ids[0]!, ids[1]!, ids[2]!], pos: [5, 0, 11] }, state: cache(batched) }],
        ];
        for (const [g, binds] of runs) {
          const ref = evaluate(g, binds);
          for (const kind of BACKEND_KINDS) {
            const p = compile(g, defaultTarget(kind));
            // AIE tiles stream few operands (5 bindings), so fewer regions fit there.
            expect(p.dispatchCount(), `${fam} ${kind} ${g === prefill ? "prefill" : "decode"}`).toBeLessThan(
              p.unfusedDispatchCount() / (kind === "aie" ? 1 : 2),
            );
            const got = evaluate(p.graph, binds, { ops: PLAN_OPS });
            expect(rel(got.outputs.logits!, ref.outputs.logits!), `${fam} ${kind}`).toBeLessThanOrEqual(1e-6);
            for (const k of Object.keys(ref.state)) expect(rel(got.state[k]!, ref.state[k]!)).toBeLessThanOrEqual(1e-6);
            // Decode: llama3's q/k/v join one dispatch per layer (decision 0402) where the target binds their buffers
            // (not on AIE tiles, whose DMA channels bind 5).
            if (fam === "llama3" && g !== prefill && kind !== "aie")
              expect(p.horizontalGroups().length, `${fam} ${kind}`).toBe(m.config.layerTypes.length);
            // Every full-attention layer's chain was recognized.
            expect(p.graph.eqns.filter((e) => e.op === "Attention").length).toBe(
              m.config.layerTypes.filter((t) => t !== "linear").length,
            );
            // KV caches are written in place: every attention cache's state_out aliases its state_in.
            const buf = p.buffers();
            const kv = p.graph.states.filter((s) => s.key.endsWith(".k") || s.key.endsWith(".v"));
            expect(kv.length).toBe(g === prefill ? 0 : 2 * m.config.layerTypes.filter((t) => t !== "linear").length);
            for (const s of kv) expect(buf.aliases.get(s.output), `${fam} ${kind} ${s.key}`).toBe(s.input);
          }
        }
      } finally {
        ckpt.close();
        m.close();
      }
      // Twelve evaluations of a hybrid model on a shared 2-core machine.
    }, 120_000);
  }

  test.each(["llama3", "qwen3", "gemma3", "olmoe", "qwen35"])(
    "%s: poot logits --compiled --target wgpu matches transformers' float64 logits",
    async (fam) => {
      const dir = path.join(FIX, "hf", fam);
      const ids = (JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[] })
        .prompt_ids;
      const want = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("prompt_logits");
      const outs: Float32Array[] = [];
      for (const extra of [["--compiled", "--target", "wgpu"], []]) {
        const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "poot-compiled-")), "l.bin");
        const r = await poot("logits", dir, "--ids", ids.join(","), "--out", file, ...extra);
        expect(r.code, r.err).toBe(0);
        const b = fs.readFileSync(file);
        outs.push(new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4));
        fs.rmSync(path.dirname(file), { recursive: true, force: true });
      }
      const relF = (a: Float32Array, r: Float32Array): number =>
        rel(
          { dtype: "f32", shape: [a.length], data: Float64Array.from(a) },
          { dtype: "f32", shape: [r.length], data: Float64Array.from(r) },
        );
      expect(relF(outs[0]!, want)).toBeLessThanOrEqual(1e-4);
      expect(relF(outs[0]!, outs[1]!)).toBeLessThanOrEqual(1e-6);
    },
  );

  test.each(["Q8_0", "Q4_K_M", "F16"])(
    "GGUF %s (packed weights): compiled prefill equals the primitive graph on cuda and wgpu",
    (q) => {
      const file = path.join(FIX, "gguf", "llama3-w256", `model-${q}.gguf`);
      const m = LoadedModel.open(file);
      const ckpt = openCheckpoint(file);
      try {
        const g = m.graph({ kind: "prefill", tokens: 4 });
        const binds = { consts: checkpointConsts(ckpt), slots: { ids: [1, 17, 99, 5] } };
        const ref = evaluate(g, binds);
        for (const kind of ["cuda", "wgpu"] as const) {
          const p = compile(g, defaultTarget(kind));
          if (q !== "F16") expect(p.graph.eqns.some((e) => e.op === "PackedContraction")).toBe(true);
          expect(
            rel(evaluate(p.graph, binds, { ops: PLAN_OPS }).outputs.logits!, ref.outputs.logits!),
          ).toBeLessThanOrEqual(1e-6);
          expect([...p.dispatchBreakdown().perLayer.keys()]).toEqual([0, 1]);
        }
      } finally {
        ckpt.close();
        m.close();
      }
    },
    60_000,
  );

  test("poot compile --explain prints passes, dispatches with kernels, declines and memory", async () => {
    const r = await poot("compile", path.join(FIX, "hf", "llama3"), "--target", "cuda", "--explain");
    expect(r.code).toBe(0);
    for (const s of [
      "passes that changed the graph:",
      "fusion",
      "dispatches per layer:",
      "Attention",
      "synthesized",
      "imported",
      "declines: none",
      "peak transient bytes:",
      "buffer bytes:",
    ])
      expect(r.out).toContain(s);
  });

  // q/k/v as one dispatch (decision 0402): 7 a layer + 3; `--horizontal-fusion shared-epilogue` gives the former 9.
  test.each([
    ["cuda", "grouped", 7],
    ["wgpu", "grouped", 7],
    ["cuda", "shared-epilogue", 9],
  ] as const)(
    "Llama-3.2-1B config.json, decode on %s (%s): %i dispatches per layer + 3",
    async (target, mode, perLayer) => {
      const r = await poot(
        "compile",
        path.join(FIX, "configs", "llama-3.2-1b.json"),
        "--target",
        target,
        "--horizontal-fusion",
        mode,
        "--json",
      );
      expect(r.code).toBe(0);
      const j = JSON.parse(r.out) as {
        unfusedDispatches: number;
        fusedDispatches: number;
        compileMs: number;
        dispatchesPerLayer: Record<string, number>;
        dispatchesOutsideLayers: number;
        horizontalGroups: number;
      };
      expect(Object.keys(j.dispatchesPerLayer)).toHaveLength(16);
      for (const n of Object.values(j.dispatchesPerLayer)) expect(n).toBe(perLayer);
      expect(j.dispatchesOutsideLayers).toBe(3);
      expect(j.fusedDispatches).toBe(16 * perLayer + 3);
      expect(j.horizontalGroups).toBe(perLayer === 7 ? 16 : 0);
      expect(j.unfusedDispatches).toBeGreaterThan(500);
      expect(j.compileMs).toBeGreaterThan(0);
    },
  );

  test("a bad target is a usage error naming the choices", async () => {
    const r = await poot("compile", path.join(FIX, "hf", "llama3"), "--target", "tpu");
    expect(r.code).toBe(1);
    expect(r.err).toContain("--target must be one of cpu, wgpu, vulkan, cuda, rocm, aie");
  });

  test("a bad --horizontal-fusion is a usage error naming the choices", async () => {
    const r = await poot("compile", path.join(FIX, "hf", "llama3"), "--target", "cuda", "--horizontal-fusion", "all");
    expect(r.code).toBe(1);
    expect(r.err).toContain("--horizontal-fusion must be grouped or shared-epilogue");
  });
});
