// gpu-check.ts's timing sections (launch overhead, the decode step's GEMVs replayed as one graph, GEMVs against the
// copy bandwidth) as a `poot-bench-result/1` record, each figure beside the baseline measured in the same process.
import {
  type BenchCase,
  type BenchFigure,
  type BenchResult,
  type BenchResultInput,
  figure,
  ratiosOf,
} from "@poot/testkit";
import { CudaBenchResultError, num } from "./cuda-bench-result.js";

/** A number field of a gpu-check section, or a one-line error naming the section and the field. */
function field(results: Readonly<Record<string, unknown>>, section: string, key: string): number {
  const s = results[section];
  const v = typeof s === "object" && s !== null ? (s as Record<string, unknown>)[key] : undefined;
  if (!num(v)) throw new CudaBenchResultError(`gpu-check ${section}.${key}: not a number (the section failed?)`);
  return v;
}

function pair(
  id: string,
  label: string,
  metrics: Record<string, BenchFigure>,
  anchor: string,
  anchorMetrics: Record<string, BenchFigure>,
): BenchCase {
  return {
    id,
    label,
    backend: "cuda",
    format: null,
    numerics: null,
    model: "synthetic",
    metrics,
    anchor,
    anchorMetrics,
    ratios: ratiosOf(metrics, anchorMetrics),
  };
}

/**
 * The record of one gpu-check.ts run (`results` is its gpu-check.json): CUDA graph replay against plain launches
 * (µs per kernel), the 113 GEMVs of a Llama-3.2-1B bf16 decode step replayed as one graph against the same launches
 * made plainly (ms per step and the tok/s it bounds), and each GEMV's GB/s against the device copy bandwidth.
 */
export function gpuCheckInput(
  results: Readonly<Record<string, unknown>>,
  opts: { commit: string; command: string; load: BenchResult["load"]; machine?: BenchResult["machine"]; date?: string },
): BenchResultInput {
  const one = (v: number, unit: string): BenchFigure => figure([v], unit);
  const cases: BenchCase[] = [
    pair(
      "launch-graph-replay",
      "CUDA graph replay, per kernel",
      { usPerKernel: one(field(results, "launch-overhead", "graphWallUsPerKernel"), "µs/kernel") },
      "plain-launches",
      { usPerKernel: one(field(results, "launch-overhead", "plainHostUsPerLaunch"), "µs/kernel") },
    ),
  ];
  const steps = results["decode-step-gemvs"];
  if (typeof steps === "object" && steps !== null && !("error" in steps)) {
    const g = field(results, "decode-step-gemvs", "graphWallMs");
    const p = field(results, "decode-step-gemvs", "plainWallMs");
    cases.push(
      pair(
        "decode-step-gemvs-graph",
        "decode step's GEMVs, one graph",
        { msPerStep: one(g, "ms/step"), stepBoundTokS: one(1000 / g, "tok/s") },
        "plain-launches",
        { msPerStep: one(p, "ms/step"), stepBoundTokS: one(1000 / p, "tok/s") },
      ),
    );
  }
  const copy = field(results, "copy-bandwidth", "copyReadWriteGBps");
  for (const [section, v] of Object.entries(results)) {
    if (!section.startsWith("gemv-") || !Array.isArray(v)) continue;
    for (const f of v as Record<string, unknown>[]) {
      if (!num(f["GBps"]) || typeof f["kernel"] !== "string") continue;
      const kernel = f["kernel"].replace(/ \(.*\)$/, "").replace(/[^A-Za-z0-9_.-]+/g, "-");
      cases.push({
        ...pair(
          `${section}-${kernel}`,
          `${f["kernel"]} ${f["dtype"]} ${f["N"]}x${f["K"]}`,
          {
            GBps: one(f["GBps"], "GB/s"),
          },
          "copy",
          { GBps: one(copy, "GB/s") },
        ),
        format: typeof f["dtype"] === "string" ? f["dtype"] : null,
      });
    }
  }
  const device = results["device"] as Record<string, unknown> | undefined;
  return {
    name: "cuda-gpu-check",
    title: "CUDA launch overhead, graph replay of a decode step's GEMVs, GEMV bandwidth (gpu-check.ts)",
    ...(opts.date === undefined ? {} : { date: opts.date }),
    commit: opts.commit,
    command: opts.command,
    ...(opts.machine === undefined ? {} : { machine: opts.machine }),
    load: opts.load,
    settings: { timedRunsPerFigure: 7, device: typeof device?.["name"] === "string" ? device["name"] : null },
    anchors: [
      { id: "plain-launches", name: "the same kernels launched one cuLaunchKernel at a time (koffi), same process" },
      { id: "copy", name: "cuMemcpyDtoD bandwidth (read + write bytes), same process" },
    ],
    cases,
    notes: [
      "Each figure is the median of 7 timed runs in one process; its runs list holds that median (the tool keeps no other).",
    ],
  };
}
