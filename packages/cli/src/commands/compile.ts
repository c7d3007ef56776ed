// `poot compile MODEL|config.json --target KIND [--mode decode|prefill] [--tokens N] [--batch B] [--explain]
// [--json]`: traces the model and compiles it with @poot/graph-plan; prints what the compiler did.
import { readFileSync, statSync } from "node:fs";
import { peakTransientBytes, type Graph } from "@poot/graph-ir";
import { cpuLoweringTarget, CpuError, type CpuNumerics } from "@poot/backend-cpu";
import { ExecutorError } from "@poot/executor";
import {
  BACKEND_KINDS,
  PlanError,
  compile,
  defaultTarget,
  type BackendKind,
  type CompileOptions,
  type Program,
} from "@poot/graph-plan";
import {
  LoadedModel,
  parseHFConfig,
  traceModel,
  type ActivationNumerics,
  type GraphKind,
  type PagedLayout,
} from "@poot/models";
import { CliError } from "../errors.js";
import { horizontalFusion, loweringCache } from "./backends.js";
import {
  LANGUAGE_OF,
  defaultLowering,
  lowerProgram,
  type LoweringCache,
  type LoweringTarget,
} from "@poot/executor/lowering";
import { configWeights } from "./config-weights.js";
import type { CommandModule } from "./index.js";
import { checkTarget, withModelErrors } from "./model-args.js";
import {
  activationsOption,
  cutOfGraph,
  describePlacement,
  numericsOption,
  parseActivations,
  parseNumerics,
  placementOptions,
  placementReportOf,
  planPlacement,
  type PlacementFlags,
} from "@poot/serve";
import { BACKEND_NAMES } from "./backends.js";
import { compileRanks, tensorParallelReport } from "./compile-tp.js";

interface CompileFlags extends PlacementFlags {
  numerics?: string;
  target: string;
  mode: string;
  tokens?: string;
  batch: string;
  context: string;
  pageSize?: string;
  pages?: string;
  horizontalFusion?: string;
  explain?: boolean;
  json?: boolean;
  activations?: string;
}

function positive(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new CliError("bad-input", `${flag} must be a positive integer, got "${text}"`, { command: "compile" });
  return n;
}

/**
 * The graph kind of `--mode`, `--tokens`, `--batch`, `--context` and, for the paged KV layout, `--page-size`
 * (with `--pages`, default enough for `--batch` sequences of `--context` tokens) (shared with `poot kernels`).
 */
export function graphKind(
  o: Pick<CompileFlags, "mode" | "tokens" | "batch" | "context" | "pageSize" | "pages">,
): GraphKind {
  const batch = positive(o.batch, "--batch"),
    context = positive(o.context, "--context");
  if (o.mode === "prefill") return { kind: "prefill", tokens: positive(o.tokens ?? "16", "--tokens") };
  if (o.mode !== "decode")
    throw new CliError("bad-input", `--mode must be decode or prefill, got "${o.mode}"`, { command: "compile" });
  let paged: PagedLayout | undefined;
  if (o.pageSize !== undefined) {
    const pageSize = positive(o.pageSize, "--page-size");
    if ((pageSize & (pageSize - 1)) !== 0)
      throw new CliError("bad-input", `--page-size must be a power of two, got "${o.pageSize}"`, {
        command: "compile",
      });
    const pages = o.pages === undefined ? batch * Math.ceil(context / pageSize) : positive(o.pages, "--pages");
    paged = { pageSize, pages, lanes: batch };
  } else if (o.pages !== undefined)
    throw new CliError("bad-input", "--pages needs --page-size", { command: "compile" });
  if (batch > 1) return { kind: "batched-decode", batch, context, ...(paged === undefined ? {} : { paged }) };
  return {
    kind: "decode",
    context,
    tokens: positive(o.tokens ?? "1", "--tokens"),
    ...(paged === undefined ? {} : { paged }),
  };
}

/** Traces MODEL (a model folder, a .gguf, or a bare config.json compiled without weights). */
export function trace(model: string, kind: GraphKind, activations: ActivationNumerics = "f32"): Graph {
  return withModelErrors("compile", model, () => {
    let isFile = false;
    try {
      isFile = statSync(model).isFile();
    } catch {
      throw new CliError("file-unreadable", `cannot read ${model}`, { command: "compile", file: model });
    }
    if (isFile && model.endsWith(".json")) {
      const cfg = parseHFConfig(JSON.parse(readFileSync(model, "utf8")), model);
      const raw = JSON.parse(readFileSync(model, "utf8")) as { torch_dtype?: string };
      return traceModel(cfg, configWeights(cfg, raw.torch_dtype === "bfloat16" ? "BF16" : "F32", model), kind);
    }
    const m = LoadedModel.open(model, { activations });
    try {
      return m.graph(kind);
    } finally {
      m.close();
    }
  });
}

/** What the shared lowering made of the graph for the target's language, and where it came from. */
export interface LoweringReport {
  readonly language: string;
  /** Kernel launches per step the device will submit (graph-plan's dispatches plus split kernels' second launches). */
  readonly launchesPerStep: number;
  readonly kernels: number;
  /** The lowering cache's outcome: hit, miss, rebuilt (a corrupted entry), or off. */
  readonly cache: string;
  readonly ms: number;
}

/**
 * The lowering target `kind`'s device lowers for: the CPU's as its executor builds it here (the plan caps of its native
 * library's formats, its kernels and `numerics`, decision 2345), the other kinds' defaults.
 */
function loweringTargetOf(kind: BackendKind, options: CompileOptions, numerics: CpuNumerics): LoweringTarget {
  return kind === "cpu"
    ? cpuLoweringTarget({ compile: options, numerics })
    : defaultLowering(LANGUAGE_OF[kind as Exclude<BackendKind, "aie">], options);
}

/** Lowers `g` as the target's device would (its fusion policy, through `cache` when given) and reports it. */
export function lowerReport(
  g: Graph,
  kind: BackendKind,
  options: CompileOptions,
  cache: LoweringCache | undefined,
  numerics: CpuNumerics = "exact",
): LoweringReport | null {
  if (kind === "aie") return null;
  const target = loweringTargetOf(kind, options, numerics);
  const t0 = performance.now();
  const p = cache !== undefined ? cache.lower(g, target, "program") : lowerProgram(g, target);
  return {
    language: target.language,
    launchesPerStep: p.launches.filter((l) => l.phase === "step").length,
    kernels: p.kernels.length,
    cache: cache?.last ?? "off",
    ms: Number((performance.now() - t0).toFixed(1)),
  };
}

/** The report `--json` prints; `--explain` prints the same as text. */
export function compileReport(
  source: Graph,
  p: Program,
  lowering: LoweringReport | null = null,
): Record<string, unknown> {
  const b = p.dispatchBreakdown();
  const buf = p.buffers();
  return {
    target: p.target.kind,
    unfusedDispatches: p.unfusedDispatchCount(),
    fusedDispatches: p.dispatchCount(),
    bindDispatches: p.bindDispatchCount(),
    compileMs: Number(p.compileMs.toFixed(2)),
    eqnsBefore: source.eqns.length,
    eqnsAfter: p.graph.eqns.length,
    passes: p.passes().map((r) => ({
      name: r.name,
      numerics: r.numerics,
      eqnsBefore: r.eqnsBefore,
      eqnsAfter: r.eqnsAfter,
      rewrites: r.rewrites,
      ms: Number(r.ms.toFixed(2)),
    })),
    dispatchesPerLayer: Object.fromEntries(b.perLayer),
    dispatchesOutsideLayers: b.other,
    dispatches: p
      .plans()
      .filter((x) => x.dispatches.length > 0 && x.phase === "step")
      .map((x) => ({
        eqn: x.eqn,
        op: x.op,
        layer: x.layer,
        launches: x.dispatches.length,
        provenance: x.kernel.provenance,
        kernel:
          x.kernel.provenance === "imported"
            ? x.kernel.name
            : x.kernel.provenance === "synthesized"
              ? x.kernel.request.kind
              : null,
      })),
    horizontalGroups: p.horizontalGroups().length,
    declines: p.declines(),
    numericalDeclines: p.numericalDeclines(),
    peakTransientBytes: { unfused: peakTransientBytes(source), fused: p.peakTransientBytes() },
    bufferBytes: {
      arena: buf.arenaBytes,
      unshared: buf.unsharedBytes,
      consts: buf.constBytes,
      prepared: buf.preparedBytes,
      state: buf.stateBytes,
    },
    lowering,
  };
}

function explain(r: Record<string, unknown>): string {
  const lines: string[] = [];
  const passes = r.passes as {
    name: string;
    numerics: string;
    eqnsBefore: number;
    eqnsAfter: number;
    rewrites: Record<string, number>;
    ms: number;
  }[];
  lines.push(
    `target ${String(r.target)}: ${String(r.eqnsBefore)} -> ${String(r.eqnsAfter)} equations, ${String(r.unfusedDispatches)} -> ${String(r.fusedDispatches)} dispatches, compiled in ${String(r.compileMs)} ms`,
  );
  lines.push("passes that changed the graph:");
  for (const p of passes)
    lines.push(
      `  ${p.name.padEnd(17)} ${p.eqnsBefore} -> ${p.eqnsAfter}  (${p.numerics}, ${p.ms} ms)  ${Object.entries(
        p.rewrites,
      )
        .map(([k, v]) => `${k} x${v}`)
        .join(", ")}`,
    );
  const per = r.dispatchesPerLayer as Record<string, number>;
  lines.push(
    `dispatches per layer: ${Object.entries(per)
      .map(([l, n]) => `${l}:${n}`)
      .join(" ")}; outside layers: ${String(r.dispatchesOutsideLayers)}`,
  );
  lines.push(`horizontal groups (one dispatch each, decision 0402): ${String(r.horizontalGroups)}`);
  lines.push("dispatches (eqn op layer launches kernel provenance):");
  for (const d of r.dispatches as {
    eqn: number;
    op: string;
    layer: number | null;
    launches: number;
    provenance: string;
    kernel: string;
  }[]) {
    lines.push(`  #${d.eqn} ${d.op} ${d.layer ?? "-"} x${d.launches} ${d.kernel} ${d.provenance}`);
  }
  const dec = r.declines as { pattern: string; value: number; name?: string; check: string; detail: string }[];
  lines.push(`declines: ${dec.length === 0 ? "none" : ""}`);
  for (const d of dec)
    lines.push(`  ${d.pattern} at %${d.value}${d.name === undefined ? "" : ` (${d.name})`}: ${d.check} — ${d.detail}`);
  const nd = r.numericalDeclines as { pass: string; rule: string; value: number; reason: string }[];
  lines.push(`numerical declines: ${nd.length === 0 ? "none" : ""}`);
  for (const d of nd) lines.push(`  ${d.pass}/${d.rule} at %${d.value}: ${d.reason}`);
  const pk = r.peakTransientBytes as { unfused: number; fused: number };
  const bb = r.bufferBytes as { arena: number; unshared: number; consts: number; prepared: number; state: number };
  lines.push(`peak transient bytes: unfused ${pk.unfused}, fused ${pk.fused}`);
  lines.push(
    `buffer bytes: arena ${bb.arena} (unshared ${bb.unshared}), weights ${bb.consts}, prepared at bind ${bb.prepared} (${String(r.bindDispatches)} launches), state ${bb.state}`,
  );
  const lo = r.lowering as LoweringReport | null;
  if (lo !== null)
    lines.push(
      `lowering (${lo.language}, the device's fusion policy): ${lo.launchesPerStep} launches per step, ${lo.kernels} kernels, cache ${lo.cache}, ${lo.ms} ms`,
    );
  return lines.join("\n") + "\n";
}

/** Runs a lowering, turning the executor's typed refusal into a CliError naming the model. */
function withLowerErrors<T>(model: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ExecutorError || err instanceof CpuError)
      throw new CliError("command-failed", err.message, { command: "compile", file: model });
    throw err;
  }
}

/** The `compile` subcommand. */
export const compileCommand: CommandModule = {
  name: "compile",
  register: (program, io) => {
    placementOptions(program.command("compile"))
      .description(
        "trace and compile a model for a target; print dispatch counts (--explain: what each pass did; --json: one object)",
      )
      .argument("<model>", "a Hugging Face model folder, a .gguf file, or a config.json (compiled without weights)")
      .requiredOption("--target <kind>", `backend kind: ${BACKEND_KINDS.join(" | ")}`)
      .option("--mode <mode>", "decode | prefill", "decode")
      .option("--tokens <n>", "tokens per step (decode default 1, prefill default 16)")
      .option("--batch <n>", "sequences per decode step", "1")
      .option("--context <n>", "KV cache capacity in tokens", "2048")
      .option("--page-size <n>", "trace the paged KV layout with pages of this many tokens (a power of two)")
      .option("--pages <n>", "pages in the paged KV pool (default: --batch sequences of --context tokens)")
      .option("--horizontal-fusion <mode>", "grouped (default: q/k/v as one dispatch) | shared-epilogue")
      .addOption(activationsOption())
      .addOption(numericsOption())
      .option("--explain", "print passes, dispatches with their kernels, declines and memory")
      .option("--json", "print the report as one JSON object")
      .action((model: string, o: CompileFlags) => {
        const target = checkTarget(o.target, "compile");
        const numerics = parseNumerics(o.numerics, "compile") ?? "exact";
        const g = trace(model, graphKind(o), parseActivations(o.activations, "compile"));
        let p: Program;
        try {
          p = compile(g, defaultTarget(target), {
            mode: o.mode === "prefill" ? "prefill" : "decode",
            ...horizontalFusion(o.horizontalFusion, "compile"),
          });
        } catch (err) {
          if (err instanceof PlanError)
            throw new CliError("command-failed", err.message, { command: "compile", file: model });
          throw err;
        }
        const opts: CompileOptions = {
          mode: o.mode === "prefill" ? "prefill" : "decode",
          ...horizontalFusion(o.horizontalFusion, "compile"),
        };
        const lowering =
          o.explain === true || o.json === true
            ? withLowerErrors(model, () =>
                lowerReport(
                  g,
                  target,
                  opts,
                  loweringCache((m) => io.err(`${m}\n`)),
                  numerics,
                ),
              )
            : null;
        const r = compileReport(g, p, lowering);
        // With a placement flag (or --device-memory: the default placement, decision 1705): where each block would run,
        // bytes per device and hand-offs per token.
        const plan = planPlacement(o, o.target, model, "f32", "compile", [...BACKEND_NAMES, o.target], () =>
          cutOfGraph(g, "compile", model),
        );
        const placement =
          plan === null
            ? null
            : {
                ...placementReportOf(cutOfGraph(g, "compile", model), plan.placement),
                ...(plan.chosen === undefined ? {} : { chosen: plan.chosen }),
              };
        r.placement = placement;
        const ranks = compileRanks(o.tp);
        const tp = ranks === null ? null : tensorParallelReport(model, g, ranks, target, opts);
        if (tp !== null) r.tensorParallel = { ...tp, text: undefined };
        if (o.json === true) io.out(`${JSON.stringify(r)}\n`);
        else if (o.explain === true)
          io.out(
            explain(r) +
              (placement === null
                ? `placement: every block on ${o.target} as one program (compile asks no device for its memory: --device-memory N plans the default split)\n`
                : `${describePlacement(placement).join("\n")}\n`) +
              (tp === null ? "" : tp.text),
          );
        else
          io.out(
            `${o.target}: ${String(r.unfusedDispatches)} -> ${String(r.fusedDispatches)} dispatches (${Object.values(r.dispatchesPerLayer as Record<string, number>).join(",")} per layer, ${String(r.dispatchesOutsideLayers)} outside), ${String(r.compileMs)} ms\n` +
              (tp === null
                ? ""
                : `--tp ${tp.ranks}: ${tp.dispatchesPerRank} dispatches per rank, ${tp.collectivesPerStep["all-reduce"]!.count} all-reduces (${tp.collectivesPerStep["all-reduce"]!.bytes} bytes) per step\n`),
          );
      });
  },
};
