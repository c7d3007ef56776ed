// The kernels of a compiled Program lowered for one codegen target: each plan's kernel from kernelgen's
// `planKernel` (imported or synthesized, the same mapping the executors use), then the target's `lower`.
import { CodegenError, TARGETS, type TargetCode, type TargetName } from "@poot/codegen";
import { BACKEND_OF, codegenCapsFor } from "@poot/executor/lowering";
import { defaultTarget, type BackendKind, type DeviceCaps as PlanCaps, type Program } from "@poot/graph-plan";
import type { Graph } from "@poot/graph-ir";
import { KernelgenError, planKernel, synthCapsFrom } from "@poot/kernelgen";
import type { Kernel } from "@poot/kernel-dsl";
import { CliError, invariant } from "../errors.js";
import { compileForCommand } from "./model-args.js";

/** The codegen targets `poot kernels` writes, in a stable order. */
export const KERNEL_TARGETS: readonly TargetName[] = ["wgsl", "ptx", "spirv", "amdgpu", "wasm"];

/** The planner caps of `target`: the backend kind's defaults, with one-lane subgroups for Wasm (decision 0920). */
export function planCapsFor(target: TargetName): { kind: BackendKind; overrides: Partial<PlanCaps> } {
  // The Wasm code generator runs subgroups of one lane, so kernels for it must not be synthesized for wider ones.
  return { kind: BACKEND_OF[target], overrides: target === "wasm" || target === "x86" ? { subgroupSize: 1 } : {} };
}

/** One lowered kernel: its file stem, the plans that launch it, and the target code. */
export interface EmittedKernel {
  /** File stem: the imported kernel's library name, or `p<plan>_<op>` for a synthesized one. */
  readonly name: string;
  /** Indices of the plans that launch this kernel. */
  readonly plans: number[];
  /** The lowered code. */
  readonly code: TargetCode;
  /** The kernel it was lowered from (its uniforms' types give the by-value arguments' layout). */
  readonly kernel: Kernel;
}

/**
 * Compiles `graph` for `target`'s backend kind; `caps` overrides its default caps (e.g. one AMD GPU's, graph-plan's
 * ROCM_ARCHS).
 */
export function compileFor(
  graph: Graph,
  target: TargetName,
  mode: "decode" | "prefill",
  file: string,
  caps: Partial<PlanCaps> = {},
): Program {
  const { kind, overrides } = planCapsFor(target);
  return compileForCommand(graph, defaultTarget(kind, { ...overrides, ...caps }), mode, "kernels", file);
}

/**
 * Every distinct kernel of `program` lowered for `target`: a kernel launched by several plans (an imported one
 * with other uniforms, or the same synthesized kernel in every layer) appears once, named after its first plan. Throws `command-failed` naming the plan when
 * kernelgen or codegen refuses one.
 */
export function emitKernels(program: Program, target: TargetName, file: string): EmittedKernel[] {
  const t = program.target;
  invariant(t.kind !== "aie", "poot kernels plans for GPU-like targets only");
  // As the CUDA executor plans them: attention may split over the KV length, with a combine dispatch (decision 0804).
  const synth = {
    ...synthCapsFrom(t.caps),
    ...(target === "ptx" ? { splitAttention: true, splitBlockGemv: true } : {}),
  };
  const caps = codegenCapsFor(target, t.caps);
  const byName = new Map<string, EmittedKernel>();
  const byIr = new Map<string, EmittedKernel>();
  program.plans().forEach((plan, i) => {
    const src = plan.kernel;
    if (src.provenance === "none") return;
    const synthName = `p${i}_${plan.op.toLowerCase()}`;
    try {
      const k = planKernel(src, synth, synthName);
      const name = src.provenance === "imported" && k.fallback === undefined ? src.name : synthName;
      for (const [stem, kernel] of [
        [name, k.kernel],
        ...(k.then === undefined ? [] : [[`${name}_combine`, k.then.kernel] as const]),
      ] as const) {
        // Plans of repeated layers get the same kernel under another name: keep the first, list the plans.
        const key = JSON.stringify({ ...kernel, name: "" });
        const seen = byName.get(stem) ?? byIr.get(key);
        if (seen !== undefined) {
          seen.plans.push(i);
          continue;
        }
        const e: EmittedKernel = { name: stem, plans: [i], code: TARGETS[target].lower(kernel, caps), kernel };
        byName.set(stem, e);
        byIr.set(key, e);
      }
    } catch (err) {
      if (err instanceof KernelgenError || err instanceof CodegenError) {
        throw new CliError("command-failed", `plan ${i} (${plan.op}, eqn ${plan.eqn}) for ${target}: ${err.message}`, {
          command: "kernels",
          file,
        });
      }
      throw err;
    }
  });
  return [...byName.values()];
}
