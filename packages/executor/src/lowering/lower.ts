// The one lowering every device runs: graph-plan compiles the graph for the target's caps, kernelgen maps each
// plan to a kernel (imported or synthesized), codegen lowers it to the target's language, and the buffers, launches,
// state copies and outputs are laid out as plain data (types.ts). No device is touched here.

import { TARGETS, type TargetCode } from "@poot/codegen";
import { numel, storageBytes, validateGraph, type Graph, type HostData, type ValueId } from "@poot/graph-ir";
import { PlanError, Program, compile, makeTarget, type Plan } from "@poot/graph-plan";
import { KernelgenError, planKernel, type PlanKernel } from "@poot/kernelgen";
import { stageParts, type StageInput } from "../contract.js";
import { ExecutorError, invariant } from "../errors.js";
import { stateCopies, viewRegions } from "../regions.js";
import { schemaOf } from "../schema.js";
import { bytesOf, storageOf } from "../storage.js";
import { nativeRouter } from "./native.js";
import type {
  LoweredArg,
  LoweredBuffer,
  LoweredKernel,
  LoweredLaunch,
  LoweredProgram,
  LoweringTarget,
  RoutedLaunch,
} from "./types.js";

/** Options of {@link lowerProgram}. */
export interface LowerProgramOptions {
  /** The program's name (kernel entry points derive from it). Default `"program"`. */
  readonly name?: string;
  /** The cache key to record (see `loweringKey` of `@poot/executor/lowering-cache`); default `""`. */
  readonly key?: string;
}

/** A compiled program for exactly this target is used as it is; anything else is compiled (again) from its graph. */
function compiled(
  input: StageInput | Program,
  target: LoweringTarget,
  name: string,
): { program: Program; source: Graph; reused?: true } {
  if (
    input instanceof Program &&
    input.target.kind === target.kind &&
    JSON.stringify(input.target.caps) === JSON.stringify(target.plan)
  ) {
    return { program: input, source: input.source, reused: true };
  }
  const source = input instanceof Program ? input.source : stageParts(input).graph;
  const ops = input instanceof Program ? undefined : stageParts(input).ops;
  validateGraph(source, ops === undefined ? {} : { ops });
  try {
    const by = target.bySize;
    const size = by === undefined ? {} : (stepTokens(source) ?? Infinity) <= by.maxStepTokens ? by.small : by.large;
    return {
      program: compile(source, makeTarget({ kind: target.kind, caps: target.plan }), { ...size, ...target.compile }),
      source,
    };
  } catch (e) {
    if (e instanceof PlanError)
      throw new ExecutorError("unsupported-program", `graph-plan cannot compile ${name}: ${e.message}`, {
        program: name,
      });
    throw e;
  }
}

/** Tokens a graph takes a step (the elements of its Token slots), or undefined when it has none. */
export function stepTokens(graph: Graph): number | undefined {
  const slots = graph.values.filter((v) => v.storage.kind === "slot" && v.storage.slot === "Token");
  return slots.length === 0 ? undefined : Math.max(...slots.map((v) => numel(v.shape)));
}

/** The plan's kernel: kernelgen's mapping, or the target's fallback for a request kernelgen declines. */
function kernelOf(program: Program, i: number, target: LoweringTarget, name: string, fallbacks: string[]): PlanKernel {
  const p = program.plans()[i]!;
  const src = p.kernel;
  invariant(src.provenance !== "none", `plan ${i} has no kernel`);
  try {
    return planKernel(src, target.synth, name);
  } catch (e) {
    if (!(e instanceof KernelgenError)) throw e;
    const fb =
      (e.code === "bad_param" || e.code === "bad_shape") && target.fallback !== undefined
        ? target.fallback(src.request, target.synth, name)
        : null;
    if (fb === null || fb.bindings === undefined) {
      throw new ExecutorError(
        "unsupported-program",
        `plan ${i} (${p.op}, ${src.request.kind}, eqn ${p.eqn}): ${e.message}`,
        { program: name },
      );
    }
    fallbacks.push(`${name}: ${e.message}`);
    return {
      kernel: fb.kernel,
      grid: fb.grid,
      uniforms: "uniforms" in fb ? (fb.uniforms as Record<string, number>) : {},
      bindings: fb.bindings,
    };
  }
}

/**
 * Lowers `input` for `target`: compiles it with graph-plan (a Program compiled for exactly this target is used as
 * it is), maps every plan to a kernel, lowers each kernel to the target's language, and lays out the buffers,
 * launches, state copies and outputs. Throws `ExecutorError("unsupported-program")` naming the plan it cannot serve.
 */
export function lowerProgram(
  input: StageInput | Program,
  target: LoweringTarget,
  options: LowerProgramOptions = {},
): LoweredProgram {
  const name = options.name ?? "program";
  const t0 = performance.now();
  const { program, source, reused } = compiled(input, target, name);
  const t1 = performance.now();
  const g = program.graph;
  const bp = program.buffers();
  const rootOf = (v: ValueId): ValueId => bp.aliases.get(v) ?? v;
  const live = new Map(bp.transients.map((t) => [t.value, t] as const));
  // Values a bind-phase plan writes are prepared once per weight binding, not transients of a step.
  const prepared = new Set(
    program
      .plans()
      .filter((p) => p.phase === "bind" && p.kernel.provenance !== "none")
      .map((p) => rootOf(p.kernel.provenance === "none" ? p.out : p.kernel.request.output.root)),
  );
  const buffers = new Map<number, LoweredBuffer>();
  const own = (root: ValueId): number => {
    if (buffers.has(root)) return root;
    const v = g.values[root]!;
    const s = v.storage;
    const n = numel(v.shape);
    const base = { id: root, bytes: storageBytes(v.dtype, n), dtype: v.dtype, shape: v.shape };
    switch (s.kind) {
      case "const":
        buffers.set(root, { ...base, kind: "weight", key: s.key });
        break;
      case "slot":
        buffers.set(root, { ...base, kind: "slot", key: s.key });
        break;
      case "state":
        buffers.set(root, { ...base, kind: "state", key: s.key });
        break;
      case "computed":
        buffers.set(root, {
          ...base,
          kind: "computed",
          data: bytesOf(storageOf(v.dtype, n, s.data as HostData)).slice(),
        });
        break;
      case "device": {
        const l = live.get(root);
        buffers.set(root, {
          ...base,
          kind: prepared.has(root) ? "prepared" : "transient",
          ...(l !== undefined ? { live: l.live, offset: l.offset } : {}),
        });
        break;
      }
      default:
        s satisfies never;
    }
    return root;
  };
  // Kernel names become entry points (WGSL, PTX, SPIR-V, Wasm): identifiers only.
  const ident = name.replace(/[^A-Za-z0-9_]/g, "_").replace(/^(?=[0-9])/, "k");
  const lower = TARGETS[target.language].lower;
  const kernels: LoweredKernel[] = [];
  const launches: LoweredLaunch[] = [];
  const fallbacks: string[] = [];
  const native =
    target.native === undefined ? null : nativeRouter(target.native, target.plan.computeUnits, target.synth);
  let scratch = 0;
  /** Lowers one kernel-dsl kernel for the target (and applies its fixup). */
  const lowerOne = (kernel: PlanKernel["kernel"], p: Plan, i: number): TargetCode => {
    let code: TargetCode;
    try {
      code = lower(kernel, target.codegen, target.lowerOptions as never);
    } catch (e) {
      throw new ExecutorError(
        "unsupported-program",
        `plan ${i} (${p.op}, eqn ${p.eqn}) for ${target.language}: ${(e as Error).message}`,
        { program: name },
      );
    }
    return target.fixup !== undefined ? target.fixup(code) : code;
  };
  /** A scratch buffer of at least `bytes` (f32 elements), by its negative id. */
  const scratchOf = (bytes: number): number => {
    const id = -++scratch;
    const elements = Math.ceil(bytes / 4);
    buffers.set(id, { id, kind: "scratch", bytes: 4 * elements, dtype: "f32", shape: [elements] });
    return id;
  };
  program.plans().forEach((p, i) => {
    const src = p.kernel;
    if (src.provenance === "none") return;
    const req = src.request;
    const outRoot = own(rootOf(req.output.root));
    const kname = `${ident}_p${i}_${p.op.toLowerCase()}`;
    const routed = native?.(p, kname) ?? null;
    const k = routed === null ? kernelOf(program, i, target, kname, fallbacks) : null;
    const scratchId =
      routed !== null
        ? routed.scratchBytes > 0
          ? scratchOf(routed.scratchBytes)
          : 0
        : k!.transient !== undefined
          ? scratchOf(4 * k!.transient.elements)
          : 0;
    const runs: RoutedLaunch[] =
      routed !== null
        ? [...routed.launches]
        : (k!.then === undefined ? [k!] : [k!, k!.then]).map((pk) => ({
            kernel: { dsl: pk.kernel },
            grid: pk.grid,
            uniforms: pk.uniforms,
            bindings: [
              ...pk.bindings,
              ...(k!.transient !== undefined
                ? [{ buffer: k!.transient.buffer, source: { kind: "scratch", offset: 0 } as const }]
                : []),
            ],
          }));
    for (const rl of runs) {
      const args: Record<string, LoweredArg> = {};
      for (const { buffer, source: b } of rl.bindings) {
        if (b.kind === "scratch") {
          args[buffer] = b.offset === 0 ? { buffer: scratchId } : { buffer: scratchId, offset: b.offset };
          continue;
        }
        const root = b.kind === "output" ? outRoot : own(rootOf(req.inputs[b.index]!.root));
        args[buffer] =
          b.kind === "input" && root === outRoot && target.snapshotInPlace
            ? { buffer: root, snapshot: true }
            : { buffer: root };
      }
      const code = "dsl" in rl.kernel ? lowerOne(rl.kernel.dsl, p, i) : rl.kernel.code;
      kernels.push({
        name: code.kernel,
        code,
        uniforms:
          "dsl" in rl.kernel
            ? rl.kernel.dsl.uniforms.map((u) => ({ name: u.name, type: u.type as "f32" | "i32" | "u32" }))
            : rl.kernel.uniforms,
      });
      launches.push({
        kernel: kernels.length - 1,
        plan: i,
        op: p.op,
        request: req.kind,
        eqn: p.eqn,
        phase: p.phase,
        grid: [...rl.grid] as [number, number, number],
        uniforms: rl.uniforms,
        args,
      });
    }
  });
  const outputs = g.outputs.map((o) => ({
    name: o.name,
    buffer: own(rootOf(o.value)),
    regions: viewRegions(g, o.value, rootOf(o.value)),
  }));
  const copies = stateCopies(g, rootOf).map((c) => ({
    key: c.key,
    from: own(c.from),
    to: own(c.to),
    regions: c.regions,
  }));
  // Slots the compiled step never reads were removed as dead: writing them is still allowed (schema), with no buffer.
  for (const v of g.values) if (v.storage.kind === "slot") own(v.id);
  return {
    key: options.key ?? "",
    name,
    kind: target.kind,
    language: target.language,
    schema: schemaOf(source),
    kernels,
    buffers: [...buffers.values()],
    arenaBytes: bp.arenaBytes,
    aliases: bp.aliases,
    launches,
    stateCopies: copies,
    outputs,
    fallbacks,
    predicted: { step: program.dispatchCount(), bind: program.bindDispatchCount() },
    timings: { compileMs: reused === true ? 0 : t1 - t0, lowerMs: performance.now() - t1 },
  };
}
