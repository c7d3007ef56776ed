// The fusion explorer's data: for each model and backend, the `poot compile --json` report (run in-process through
// the CLI itself), layer 0's primitive equations, layer 0's fused groups, and each group's kernel per codegen target.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import wabtInit from "wabt";
import {
  KERNEL_TARGETS,
  bufferIo,
  compileFor,
  compileReport,
  emitKernels,
  runCli,
  traceModelFile,
} from "../cli-source.mjs";
import { GEN_DATA, GEN_PUBLIC, REPO, write } from "./paths.mjs";

/** The models the explorer shows: the demo model and Llama-3.2-1B's config (traced without weights). */
export const EXPLORER_MODELS = [
  { id: "demo", label: "demo model (models/demo, 8 layers)", path: "models/demo" },
  { id: "llama-3.2-1b", label: "Llama-3.2-1B (config only, 16 layers)", path: "fixtures/configs/llama-3.2-1b.json" },
];
/** codegen target -> the backend kind whose program it lowers (poot kernels' mapping). */
const BACKEND = { wgsl: "wgpu", ptx: "cuda", spirv: "vulkan", amdgpu: "rocm", wasm: "cpu" };
const DECODE = { kind: "decode", context: 2048, tokens: 1 };

/** `poot compile MODEL --target KIND --json`, run through the CLI's own program; the parsed report. */
export async function cliCompileJson(model, kind) {
  const io = bufferIo();
  const code = await runCli(["compile", model, "--target", kind, "--json"], { io });
  if (code !== 0) throw new Error(`poot compile ${model} --target ${kind} failed: ${io.stderr()}`);
  return JSON.parse(io.stdout());
}

/** SPIR-V binary -> text with spirv-dis (SPIRV-Tools); Wasm binary -> text with wabt. */
function disassembler() {
  let wabt;
  const tmp = mkdtempSync(join(tmpdir(), "poot-docs-"));
  return {
    async text(code) {
      if (code.text !== undefined) return code.text;
      if (code.target === "wasm") {
        wabt ??= await wabtInit();
        const m = wabt.readWasm(code.binary, {
          readDebugNames: true,
          threads: true,
          simd: true,
          bulk_memory: true,
          multi_value: true,
          sign_extension: true,
          sat_float_to_int: true,
        });
        try {
          return m.toText({ foldExprs: false, inlineExport: false });
        } finally {
          m.destroy();
        }
      }
      const f = join(tmp, "k.spv");
      writeFileSync(f, code.binary);
      try {
        return execFileSync("spirv-dis", [f], { encoding: "utf8" });
      } catch (e) {
        throw new Error(
          `spirv-dis (SPIRV-Tools, apt package spirv-tools) is needed to show SPIR-V: ${e.message.split("\n")[0]}`,
        );
      }
    },
    dispose: () => rmSync(tmp, { recursive: true, force: true }),
  };
}

/** Ops of a fused group: its region's nodes (the primitives fused into it), or the op itself. */
function groupOps(plan) {
  const req = plan.kernel.request;
  const nodes = req?.region?.nodes ?? [];
  return nodes.length > 0 ? nodes.map((n) => n.op) : [];
}

/** Layer 0 of `program`: the dispatching plans with kind, provenance and kernel, keyed for cross-target matching. */
function layerGroups(program, kernelOf) {
  const seen = new Map();
  const out = [];
  program.plans().forEach((p, i) => {
    if (p.layer !== 0 || p.phase !== "step" || p.dispatches.length === 0) return;
    const src = p.kernel;
    const kind = src.request?.kind ?? null;
    const key0 = `${p.op}/${kind}`;
    const n = seen.get(key0) ?? 0;
    seen.set(key0, n + 1);
    const v = program.graph.values[p.out];
    out.push({
      plan: i,
      eqn: p.eqn,
      op: p.op,
      kind,
      key: `${key0}#${n}`,
      provenance: src.provenance,
      kernel: src.provenance === "imported" ? src.name : kind,
      launches: p.dispatches.length,
      name: v?.name ?? `%${p.out}`,
      type: v === undefined ? "" : `${v.dtype}[${v.shape.join(",")}]`,
      fused: groupOps(p),
      members: src.request?.group?.length ?? 1,
      kernelFile: kernelOf?.get(i) ?? null,
    });
  });
  return out;
}

/**
 * Layer 0's primitive equations of the traced graph. The tracer builds a layer inside one scope and creates the
 * layer's first weight before its first equation, so layer L is the equations whose value ids lie between the first
 * value named `layers.L.` and the first named `layers.L+1.` (views marked: a view is no dispatch).
 */
function layerPrimitives(graph, isView) {
  const first = (L) =>
    graph.values.find((v) => v.name !== undefined && v.name.includes(`layers.${L}.`))?.id ?? Infinity;
  const lo = first(0),
    hi = first(1);
  return graph.eqns
    .filter((e) => e.out >= lo && e.out < hi)
    .map((e) => {
      const v = graph.values[e.out];
      return { op: e.op, id: e.out, name: v.name ?? "", type: `${v.dtype}[${v.shape.join(",")}]`, view: isView(e.op) };
    });
}

/** Writes src/generated/explorer.json and public/generated/kernels/<model>/<target>/<kernel>.txt. */
export async function generateExplorer() {
  const { PRIMITIVE_OPS } = await import("@poot/graph-ir");
  const isView = (op) => PRIMITIVE_OPS[op]?.view === true;
  const dis = disassembler();
  const models = [];
  try {
    for (const m of EXPLORER_MODELS) {
      const file = join(REPO, m.path);
      const graph = traceModelFile(file, DECODE);
      const primitives = layerPrimitives(graph, isView);
      const backends = {};
      for (const target of KERNEL_TARGETS) {
        const kind = BACKEND[target];
        const report = await cliCompileJson(file, kind);
        const program = compileFor(graph, target, "decode", file);
        const mine = compileReport(graph, program);
        // The page must show what `poot compile` prints; the program whose kernels we lower must be that program.
        const same =
          mine.fusedDispatches === report.fusedDispatches &&
          JSON.stringify(mine.dispatches) === JSON.stringify(report.dispatches);
        if (!same)
          throw new Error(
            `explorer: the ${target} kernels' program of ${m.path} differs from \`poot compile --target ${kind}\` (${mine.fusedDispatches} vs ${report.fusedDispatches} dispatches)`,
          );
        const kernels = emitKernels(program, target, file);
        const kernelOf = new Map();
        for (const k of kernels) {
          for (const i of k.plans) if (!kernelOf.has(i)) kernelOf.set(i, k.name);
        }
        const groups = layerGroups(program, kernelOf);
        for (const g of groups) {
          if (g.kernelFile === null) continue;
          const k = kernels.find((x) => x.name === g.kernelFile);
          write(join(GEN_PUBLIC, "kernels", m.id, target, `${g.kernelFile}.txt`), await dis.text(k.code));
          const combine = kernels.find((x) => x.name === `${g.kernelFile}_combine`);
          if (combine !== undefined)
            write(join(GEN_PUBLIC, "kernels", m.id, target, `${combine.name}.txt`), await dis.text(combine.code));
        }
        backends[kind] = {
          kind,
          target,
          sameAsCompile: same,
          report: { ...report, passes: report.passes, dispatches: undefined },
          layer0: groups,
        };
      }
      models.push({ ...m, primitives, primitiveDispatchesLayer0: primitives.filter((p) => !p.view).length, backends });
    }
  } finally {
    dis.dispose();
  }
  write(join(GEN_DATA, "explorer.json"), JSON.stringify({ targets: KERNEL_TARGETS, backendOf: BACKEND, models }));
  return models;
}
