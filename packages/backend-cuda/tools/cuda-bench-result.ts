// The GPU benches' raw output as `poot-bench-result/1` records (decision 2101, 2110): `poot bench --backend cuda
// --json` processes (or vulkan/wgpu ones, from gpu-apis-h200 reports) beside their same-call anchors (transformers
// from hf-anchor.py, llama.cpp CUDA from llama-bench).
import {
  type BenchAnchor,
  type BenchCase,
  type BenchFigure,
  type BenchResult,
  type BenchResultInput,
  figure,
  ratiosOf,
} from "@poot/testkit";

/** One `poot bench --backend cuda --json` process: the variant (build) and label the script gave it, and its JSON. */
export interface PootBenchRun {
  /** Which build ran it (`new`, `main`, `base`, ...). */
  readonly variant: string;
  /** The script's label for the configuration (`bf16`, `q8`, ...). */
  readonly label: string;
  /** What `poot bench --json` printed. */
  readonly json: Readonly<Record<string, unknown>>;
}

/** An anchor's figures from the same call, and the weight format it ran. */
export interface AnchorRun {
  readonly anchor: BenchAnchor;
  /** The weight format it measured (`bf16`, `Q8_0`, ...): poot cases of that format are charted against it. */
  readonly format: string;
  readonly metrics: Readonly<Record<string, BenchFigure>>;
}

/** Raw bench output that cannot be read: the message names the source and the line. */
export class CudaBenchResultError extends Error {
  override readonly name = "CudaBenchResultError";
}

const obj = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);
/** Whether `x` is a finite number (a figure a bench could have measured). */
export const num = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);

function parseLine(line: string, where: string): Record<string, unknown> {
  let x: unknown;
  try {
    x = JSON.parse(line);
  } catch (e) {
    throw new CudaBenchResultError(`${where}: not JSON (${(e as Error).message})`);
  }
  if (!obj(x)) throw new CudaBenchResultError(`${where}: not a JSON object`);
  return x;
}

/**
 * The `BENCH <variant> [label] <json>` lines that gpu-ab.sh and the device-call scripts append to bench.jsonl (other
 * lines are ignored); `source` names the file in errors.
 */
export function parseBenchLines(text: string, source: string): PootBenchRun[] {
  const runs: PootBenchRun[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    // The label may be empty or hold the extra flags of the run; the JSON starts at the first brace.
    const m = /^BENCH\s+(\S+)\s*([^{]*?)\s*(\{.*)?$/.exec(line.trim());
    if (m === null) continue;
    if (m[3] === undefined) continue; // a process that printed nothing (it failed; its log says why)
    runs.push({ variant: m[1]!, label: m[2]!, json: parseLine(m[3], `${source}:${i + 1}`) });
  }
  return runs;
}

/**
 * The `poot bench --json` outputs of a gpu-apis-h200 report (packages/cli/bench/gpu-apis-h200.gpu.ts, the Vulkan and
 * WebGPU checks on the GPU machine: `{"bench": {"<backend>": {...}}}`), as runs of build `variant`.
 */
export function parseReport(text: string, source: string, variant: string): PootBenchRun[] {
  const x = parseLine(text, source);
  const bench = x["bench"];
  if (!obj(bench)) throw new CudaBenchResultError(`${source}: no "bench" object (did the bench step fail?)`);
  return Object.entries(bench).map(([backend, json]) => {
    if (!obj(json)) throw new CudaBenchResultError(`${source}: bench.${backend} is not an object`);
    return { variant, label: "", json };
  });
}

/** The GGUF tensor type a file name ends with (`...-Q4_K_M.gguf` -> `Q4_K_M`), or null. */
export function ggufFormatOf(name: string): string | null {
  const m = /[-_.]((?:[QI]Q?\d_[0-9A-Z_]+?)|F16|BF16|F32)(?:-\d+-of-\d+)?\.gguf$/i.exec(name);
  return m === null ? null : m[1]!.toUpperCase();
}

/**
 * Anchor lines: hf-anchor.py's (`{"anchor": "transformers-...", "decodeTokSRuns": [...]}`, bf16 safetensors) and
 * llama.cpp's `llama-bench -o jsonl` (`n_prompt`/`n_gen`, `samples_ts`; a `tg` line is a decode rate, a `pp` line a
 * prefill rate; the format from `model_type` or the file name). Lines of neither kind are refused.
 */
export function parseAnchorLines(text: string, source: string): AnchorRun[] {
  const out = new Map<string, { anchor: BenchAnchor; format: string; metrics: Record<string, BenchFigure> }>();
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const where = `${source}:${i + 1}`;
    const x = parseLine(line, where);
    if (typeof x["anchor"] === "string" && Array.isArray(x["decodeTokSRuns"])) {
      const runs = x["decodeTokSRuns"] as unknown[];
      if (runs.length === 0 || !runs.every(num)) throw new CudaBenchResultError(`${where}: decodeTokSRuns not numbers`);
      const id = x["anchor"];
      const name = `transformers ${x["transformers"]} (torch ${x["torch"]}), ${id.replace(/^transformers-/, "")}`;
      const detail = `${x["device"] ?? "cuda:0"}; bf16; ${x["promptTokens"]}-token prompt, ${x["genTokens"]} greedy tokens`;
      out.set(id, { anchor: { id, name, detail }, format: "bf16", metrics: { decodeTokS: figure(runs, "tok/s") } });
      continue;
    }
    if (num(x["n_prompt"]) && num(x["n_gen"]) && (num(x["avg_ts"]) || Array.isArray(x["samples_ts"]))) {
      const model = `${x["model_type"] ?? ""} ${x["model_filename"] ?? ""}`;
      const format = /\b(Q\d_[0-9A-Z_]+|IQ\d_[0-9A-Z_]+|BF16|F16|F32)\b/i.exec(model)?.[1]?.toUpperCase();
      if (format === undefined) throw new CudaBenchResultError(`${where}: no weight format in model_type or file`);
      const samples = Array.isArray(x["samples_ts"]) ? (x["samples_ts"] as unknown[]) : [x["avg_ts"]];
      if (samples.length === 0 || !samples.every(num))
        throw new CudaBenchResultError(`${where}: samples_ts not numbers`);
      const metric = x["n_gen"] > 0 && x["n_prompt"] === 0 ? "decodeTokS" : "prefillTokS";
      const id = `llama.cpp-${String(x["backends"] ?? "cuda").toLowerCase()}-${format}`;
      const prev = out.get(id);
      const anchor = prev?.anchor ?? {
        id,
        name: `llama.cpp ${x["build_commit"] ?? ""} (llama-bench, ${x["backends"] ?? "CUDA"})`.replace("  ", " "),
        detail: `${x["gpu_info"] ?? ""}; ${x["n_gpu_layers"] ?? "?"} GPU layers, flash attention ${x["flash_attn"] ?? "?"}`,
      };
      out.set(id, { anchor, format, metrics: { ...prev?.metrics, [metric]: figure(samples, "tok/s") } });
      continue;
    }
    throw new CudaBenchResultError(`${where}: neither an hf-anchor.py line nor a llama-bench jsonl line`);
  }
  return [...out.values()];
}

/** The figures of one `poot bench --json` output the CUDA charts use, by metric: [value or null, unit]. */
const METRICS: readonly (readonly [metric: string, field: string, unit: string])[] = [
  ["decodeTokS", "decodeTokS", "tok/s"],
  ["prefillTokS", "prefillTokS", "tok/s"],
  ["dispatchesPerToken", "decodeDispatchesPerToken", "dispatches/token"],
  ["graphLaunchesPerToken", "graphLaunchesPerToken", "launches/token"],
  ["decodeMsPerToken", "decodeMsPerToken", "ms/token"],
  ["hostMsPerToken", "hostMsPerToken", "ms/token"],
];

/** What {@link cudaBenchInput} needs beside the runs. */
export interface CudaBenchOptions {
  readonly name: string;
  readonly title: string;
  /** The commit the bundles were built from (the GPU machine has no git checkout). */
  readonly commit: string;
  readonly command: string;
  readonly machine?: BenchResult["machine"];
  /** When the run ended; default: now. */
  readonly date?: string;
  /** The weight format of a model that is not a GGUF file (make-hf.mjs writes bf16 safetensors). */
  readonly hfFormat: string;
  /** The backends the runs may name (default: cuda); a run of another is refused. */
  readonly backends?: readonly string[];
  readonly notes?: readonly string[];
}

/**
 * The record of a CUDA bench call: one case per (build, label, decode loop, model, prompt and generated tokens), whose
 * runs are its processes' medians in the order run; each case is charted against the fastest anchor of its format.
 */
export function cudaBenchInput(
  runs: readonly PootBenchRun[],
  anchors: readonly AnchorRun[],
  opts: CudaBenchOptions,
): BenchResultInput {
  if (runs.length === 0) throw new CudaBenchResultError(`${opts.name}: no poot bench output to record`);
  const groups = new Map<string, { run: PootBenchRun; format: string | null; values: Map<string, number[]> }>();
  for (const run of runs) {
    const j = run.json;
    const allowed = opts.backends ?? ["cuda"];
    if (typeof j["backend"] !== "string" || !allowed.includes(j["backend"]))
      throw new CudaBenchResultError(
        `${run.variant} ${run.label}: backend is ${JSON.stringify(j["backend"])}, not ${allowed.join(" or ")}`,
      );
    const model = String(j["model"]);
    const format = ggufFormatOf(model) ?? opts.hfFormat;
    const loop = typeof j["decodeLoop"] === "string" ? j["decodeLoop"] : null;
    const key = [j["backend"], run.variant, run.label, loop, model, j["promptTokens"], j["genTokens"]].join("|");
    const g = groups.get(key) ?? { run, format, values: new Map<string, number[]>() };
    groups.set(key, g);
    for (const [metric, field] of METRICS) {
      const v = j[field];
      if (num(v)) g.values.set(metric, [...(g.values.get(metric) ?? []), v]);
    }
  }
  const usedAnchors = new Map<string, BenchAnchor>();
  const cases: BenchCase[] = [];
  for (const { run, format, values } of groups.values()) {
    const j = run.json;
    const loop = typeof j["decodeLoop"] === "string" ? ` ${j["decodeLoop"]}` : "";
    const metrics: Record<string, BenchFigure> = {};
    for (const [metric, , unit] of METRICS) {
      const v = values.get(metric);
      if (v !== undefined) metrics[metric] = figure(v, unit);
    }
    const best = anchors
      .filter((a) => a.format.toLowerCase() === format?.toLowerCase() && a.metrics["decodeTokS"] !== undefined)
      .sort((a, b) => b.metrics["decodeTokS"]!.median - a.metrics["decodeTokS"]!.median)[0];
    if (best !== undefined) usedAnchors.set(best.anchor.id, best.anchor);
    const anchorMetrics = best?.metrics ?? {};
    const tag = run.label === "" || run.label === format ? "" : ` ${run.label}`;
    const backend = String(j["backend"]);
    const id = `${backend} ${format} ${run.variant}${tag}${loop} p${j["promptTokens"]}g${j["genTokens"]}`
      .replace(/[^A-Za-z0-9_.]+/g, "-")
      .replace(/-+$/, "");
    cases.push({
      id,
      label: `${backend} ${format} ${run.variant}${tag}${loop} p${j["promptTokens"]}+${j["genTokens"]}`,
      backend,
      format,
      numerics: null,
      model: String(j["model"]),
      metrics,
      anchor: best?.anchor.id ?? null,
      anchorMetrics,
      ratios: ratiosOf(metrics, anchorMetrics),
    });
  }
  const loads = runs.map((r) => r.json["loadAverage"]).filter(num);
  const others = anchors.filter((a) => !usedAnchors.has(a.anchor.id));
  return {
    name: opts.name,
    title: opts.title,
    ...(opts.date === undefined ? {} : { date: opts.date }),
    commit: opts.commit,
    command: opts.command,
    ...(opts.machine === undefined ? {} : { machine: opts.machine }),
    load: {
      start: loads[0] ?? 0,
      end: loads.at(-1) ?? 0,
      min: loads.length === 0 ? 0 : Math.min(...loads),
      max: loads.length === 0 ? 0 : Math.max(...loads),
    },
    settings: {
      processes: runs.length,
      runsPerProcess: runs.map((r) => r.json["runs"]).find(num) ?? null,
      hfFormat: opts.hfFormat,
    },
    anchors: [...usedAnchors.values()],
    cases,
    notes: [
      "Each run of a case is one `poot bench --json` process's figure (its median over --runs runs).",
      ...(loads.length === 0 ? ["The processes recorded no load average: load reads 0."] : []),
      ...others.map(
        (a) =>
          `Anchor ${a.anchor.id} (${a.anchor.name}, ${a.format}) measured, not charted (a faster anchor of its format ` +
          `was): ${Object.entries(a.metrics)
            .map(([m, f]) => `${m} ${f.median.toFixed(1)} ${f.unit}`)
            .join(", ")}.`,
      ),
      ...(opts.notes ?? []),
    ],
  };
}
