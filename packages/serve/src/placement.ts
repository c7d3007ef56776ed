// `--gpu-layers N` (-ngl), `--place "0-7:cuda,8-15:cpu,head:cuda"`, `--device-memory` and `--host-memory` on
// run | generate | bench | serve | compile (decision 1701): checked against the model's header and block sizes
// before any weight is read, then one executor per device named (made by the CLI's executor factory: this
// package loads no backend).
import type { Command } from "commander";
import { LoadedModel, ModelError } from "@poot/models";
import {
  RuntimeError,
  findBlocks,
  fitPlacement,
  formatPlacement,
  gpuLayers,
  parsePlacement,
  parseSize,
  unitSpans,
  type BlockCut,
  type BlockDevice,
  type Placement,
  type PlacementReport,
} from "@poot/runtime";
import type { Executor } from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
import type { ExecutorFactory } from "./command.js";
import { CliError } from "./errors.js";
import { cliErrors } from "./model-errors.js";
import { tensorParallelExecutor, tensorParallelRanks } from "./tensor-parallel.js";

/** The placement flags as commander parses them. */
export interface PlacementFlags {
  readonly gpuLayers?: string;
  readonly place?: string;
  readonly deviceMemory?: string;
  readonly hostMemory?: string;
  /** Commander's `--no-prefetch`: false reads a paged block's weights when it runs, not ahead of use. */
  readonly prefetch?: boolean;
  /** `--tp N`: tensor parallelism over N executors of the backend. */
  readonly tp?: string;
}

/** The device the host-side blocks of `--gpu-layers` run on, and the one `--host-memory` budgets. */
export const HOST_DEVICE = "cpu";

/** Adds the placement flags to a command. */
export function placementOptions(cmd: Command): Command {
  return cmd
    .option("--gpu-layers <n>", "the last N layers and the head on --backend, the rest on the cpu (alias -ngl)")
    .option("--place <spec>", 'blocks per device, e.g. "0-7:cuda,8-15:cpu,head:cuda" (layers N or N-M, embed, head)')
    .option("--device-memory <size>", "weight budget of each non-cpu device, e.g. 2G; a block must fit")
    .option("--host-memory <size>", "weight budget of the cpu device, e.g. 512M; a block must fit")
    .option("--no-prefetch", "paging: read a block's weights when it runs instead of while the block before it runs")
    .option("--tp <n>", "tensor parallelism: heads and MLP columns split over N executors of --backend (cpu)");
}

/** A checked placement and what it puts where. */
export interface PlacementPlan {
  /** The device of every block. */
  readonly placement: Placement;
  /** Devices named, in order of first use. */
  readonly devices: readonly string[];
  /** Weight bytes per device, from the checkpoint's header. */
  readonly weightBytes: Readonly<Record<string, number>>;
  /** The budget of each device that has one. */
  readonly budgets: Readonly<Record<string, number>>;
  /** How the default placement was chosen (no --place / --gpu-layers), in words; absent for an explicit one. */
  readonly chosen?: string;
  /** Paging reads the next block's weights ahead of use (decision 1706; `--no-prefetch` turns it off). */
  readonly prefetch: boolean;
}

/**
 * The share of a device's free memory the default placement fills with weights (decision 1705): the rest is left
 * for the KV cache, slots, activations and the backend's own scratch.
 */
export const DEVICE_WEIGHT_SHARE = 0.9;

/** A device's memory for the default placement: free bytes now (its query), else its size; null when unbounded. */
export function deviceMemoryOf(executor: Executor): number | null {
  const m = executor.freeMemoryBytes?.() ?? executor.caps.deviceMemoryBytes;
  return m === null || !Number.isFinite(m) ? null : m;
}

/** The block cut of MODEL's single-token decode graph, traced from its header (no weight is read). */
export function blockCutOf(model: string, weights: "f32" | "bf16", command: string): BlockCut {
  return cliErrors(command, model, () => {
    const m = LoadedModel.open(model, { weights });
    try {
      return findBlocks(m.graph({ kind: "decode", context: 2, tokens: 1 }));
    } finally {
      m.close();
    }
  });
}

/**
 * The placement the flags ask for, checked against MODEL (its layers and block sizes, from the header only),
 * or null when no placement flag is given (everything on `--backend` as one program, as before).
 */
export function planPlacement(
  o: PlacementFlags,
  backend: string,
  model: string,
  weights: "f32" | "bf16",
  command: string,
  known: readonly string[],
  cutOf: () => BlockCut = () => blockCutOf(model, weights, command),
  memory?: () => number | null,
): PlacementPlan | null {
  const explicit = o.gpuLayers !== undefined || o.place !== undefined;
  // The default (decision 1705): everything on --backend when its weights fit in the device's memory (free bytes
  // by its query, or --device-memory), else as many layers as fit there and the rest on the cpu.
  const fitting = !explicit && backend !== HOST_DEVICE && (o.deviceMemory !== undefined || memory !== undefined);
  if (!explicit && !fitting && o.deviceMemory === undefined && o.hostMemory === undefined) return null;
  if (o.gpuLayers !== undefined && o.place !== undefined)
    throw new CliError("bad-input", "--gpu-layers and --place both say where layers go: give one", { command });
  const sizes = cliErrors(command, model, () => ({
    device: o.deviceMemory === undefined ? undefined : parseSize(o.deviceMemory, "--device-memory"),
    host: o.hostMemory === undefined ? undefined : parseSize(o.hostMemory, "--host-memory"),
  }));
  let chosen: string | undefined;
  let fitted: Placement | undefined;
  if (fitting) {
    const queried = sizes.device === undefined ? (memory?.() ?? null) : null;
    if (sizes.device === undefined && queried === null && o.hostMemory === undefined) return null;
    if (sizes.device !== undefined || queried !== null) {
      const cut = cutOf();
      const budget = sizes.device ?? Math.floor(queried! * DEVICE_WEIGHT_SHARE);
      const fit = fitPlacement(cut, backend, budget, HOST_DEVICE);
      const source =
        sizes.device !== undefined
          ? `--device-memory ${mb(budget)}`
          : `${Math.round(DEVICE_WEIGHT_SHARE * 100)}% of its ${mb(queried!)} free`;
      if (fit.layersOnDevice === cut.layers && o.hostMemory === undefined) return null;
      fitted = fit.placement;
      chosen =
        fit.layersOnDevice === cut.layers
          ? `default: every block on ${backend} (weights ${mb(fit.totalBytes)} fit in ${source})`
          : `default: ${fit.layersOnDevice} of ${cut.layers} layers on ${backend} (${mb(fit.deviceBytes)} of weights fit in ${source}; the model has ${mb(fit.totalBytes)}), the rest on ${HOST_DEVICE}`;
    }
  }
  const cut = cutOf();
  const L = cut.layers;
  const placement = cliErrors(command, model, () => {
    if (fitted !== undefined) return fitted;
    if (o.place !== undefined) return parsePlacement(o.place, L, known);
    if (o.gpuLayers !== undefined) {
      const n = Number(o.gpuLayers);
      if (o.gpuLayers.trim() === "" || !Number.isSafeInteger(n) || n < 0)
        throw new CliError("bad-input", `--gpu-layers must be a non-negative integer, got "${o.gpuLayers}"`, {
          command,
        });
      return gpuLayers(n, L, backend, HOST_DEVICE);
    }
    return { layers: L, devices: Array.from({ length: L + 2 }, () => backend) };
  });
  const devices = [...new Set(placement.devices)];
  const weightBytes: Record<string, number> = {};
  const budgets: Record<string, number> = {};
  for (const d of devices) {
    // --device-memory chose the default placement: the blocks on the device fit it, nothing pages there.
    const budget = d === HOST_DEVICE ? sizes.host : fitted !== undefined ? undefined : sizes.device;
    const flag = d === HOST_DEVICE ? "--host-memory" : "--device-memory";
    const seen = new Set<string>();
    let total = 0;
    let largest: BlockCut["blocks"][number] | null = null;
    for (const b of cut.blocks) {
      if (placement.devices[b.index] !== d) continue;
      for (const c of b.consts) if (!seen.has(c)) seen.add(c), (total += cut.constBytes.get(c)!);
      if (largest === null || b.weightBytes > largest.weightBytes) largest = b;
    }
    if (budget !== undefined && largest !== null && largest.weightBytes > budget) {
      throw new CliError(
        "bad-input",
        `${flag} ${budget} bytes is smaller than the largest block placed on ${d} (${largest.name}, ${largest.weightBytes} bytes of weights)`,
        { command, file: model },
      );
    }
    weightBytes[d] = total;
    if (budget !== undefined) budgets[d] = budget;
  }
  return {
    placement,
    devices,
    weightBytes,
    budgets,
    prefetch: o.prefetch !== false,
    ...(chosen === undefined ? {} : { chosen }),
  };
}

/** A plan and its executors: what run, generate, bench and serve make before loading a model. */
export interface PlannedDevices {
  /** The plan (null: everything on --backend as one program). */
  readonly plan: PlacementPlan | null;
  /** One executor per device of the plan (the backend's first). */
  readonly placed: PlacedDevices;
}

/**
 * {@link planPlacement} with the backend's memory asked of its executor (made once, kept as the backend's device),
 * then {@link createDevices}. On an error every executor made is disposed.
 */
export function planDevices(
  o: PlacementFlags,
  backend: string,
  model: string,
  weights: "f32" | "bf16",
  command: string,
  known: readonly string[],
  make: ExecutorFactory,
): PlannedDevices {
  const tp = tensorParallelRanks(o, backend, command);
  if (tp !== null) {
    const executor = tensorParallelExecutor(tp, backend, model, weights, command, make);
    return {
      plan: null,
      placed: { executor, devices: [{ name: backend, executor }], dispose: () => executor.dispose() },
    };
  }
  let probe: Executor | undefined;
  let plan: PlacementPlan | null;
  try {
    plan = planPlacement(o, backend, model, weights, command, known, undefined, () => {
      probe ??= make(backend, command);
      return deviceMemoryOf(probe);
    });
  } catch (err) {
    probe?.dispose();
    throw err;
  }
  // createDevices disposes what it made, the backend's executor among them, when it fails.
  return { plan, placed: createDevices(plan, backend, command, make, probe) };
}

/** The executors of a plan: one per device (the backend's own executor among them); dispose them all at the end. */
export interface PlacedDevices {
  /** The `--backend` executor (the engine's default). */
  readonly executor: Executor;
  /** Every device by name. */
  readonly devices: readonly BlockDevice[];
  /** Disposes every executor. */
  dispose(): void;
}

/**
 * Creates one executor per device of `plan` with `make` (none but the backend's when `plan` is null); the backend's
 * is `backendExecutor` when given (already made to ask its memory).
 */
export function createDevices(
  plan: PlacementPlan | null,
  backend: string,
  command: string,
  make: ExecutorFactory,
  backendExecutor?: Executor,
): PlacedDevices {
  const names = plan === null ? [backend] : [...new Set([backend, ...plan.devices])];
  const made: BlockDevice[] = [];
  try {
    for (const n of names)
      made.push({
        name: n,
        executor: n === backend && backendExecutor !== undefined ? backendExecutor : make(n, command),
      });
  } catch (err) {
    for (const d of made) d.executor.dispose();
    throw err;
  }
  return {
    executor: made[0]!.executor,
    devices: made,
    dispose: () => {
      for (const d of made) d.executor.dispose();
    },
  };
}

/**
 * The engine options of a plan: the placement and its devices, with the budgets and executor factories of the
 * devices that have a budget (they page when their weights do not fit), or nothing (the single-program default).
 */
export function engineDevices(
  plan: PlacementPlan | null,
  placed: PlacedDevices,
  make: ExecutorFactory,
): {
  readonly placement?: Placement;
  readonly devices?: readonly BlockDevice[];
  readonly budgets?: Readonly<Record<string, number>>;
  readonly deviceFactories?: Readonly<Record<string, () => Executor>>;
  readonly prefetch?: boolean;
} {
  if (plan === null) return {};
  const budgets =
    Object.keys(plan.budgets).length === 0
      ? {}
      : {
          budgets: plan.budgets,
          deviceFactories: Object.fromEntries(Object.keys(plan.budgets).map((d) => [d, () => make(d, "paging")])),
        };
  return {
    placement: plan.placement,
    devices: placed.devices.filter((d) => plan.devices.includes(d.name)),
    prefetch: plan.prefetch,
    ...budgets,
  };
}

/** Megabytes with one decimal. */
function mb(n: number): string {
  return `${(n / 1e6).toFixed(1)} MB`;
}

/** The placement in lines: the spec, each unit, weight bytes per device, hand-offs per token, paged devices. */
export function describePlacement(r: PlacementReport & { readonly chosen?: string }): string[] {
  const paged = Object.entries(r.pagedDevices ?? {});
  return [
    `placement ${formatPlacement(r.placement)}: ${r.unitsPerToken} unit(s) per token, ${r.handoffsPerToken} hand-off(s) per token (${r.handoffBytesPerToken} bytes each)`,
    ...r.units.map((u) => `  ${u.device.padEnd(7)} ${u.blocks}`),
    `  weights per device: ${Object.entries(r.weightBytesByDevice)
      .map(([d, b]) => `${d} ${mb(b)}`)
      .join(", ")}`,
    ...(r.chosen === undefined ? [] : [`  ${r.chosen}`]),
    ...(paged.length === 0
      ? []
      : [`  paged (weights above the budget, LRU): ${paged.map(([d, b]) => `${d} budget ${mb(b)}`).join(", ")}`]),
  ];
}

/** The report of a placement computed from a cut alone (`poot compile`, which loads no weights). */
export function placementReportOf(cut: BlockCut, placement: Placement): PlacementReport {
  const spans = unitSpans(placement);
  const weightBytesByDevice: Record<string, number> = {};
  for (const s of spans) {
    const seen = new Set<string>();
    let bytes = 0;
    for (let b = s.first; b <= s.last; b++)
      for (const c of cut.blocks[b]!.consts) if (!seen.has(c)) seen.add(c), (bytes += cut.constBytes.get(c)!);
    weightBytesByDevice[s.device] = (weightBytesByDevice[s.device] ?? 0) + bytes;
  }
  const names = (s: { first: number; last: number }) => cut.blocks.slice(s.first, s.last + 1).map((b) => b.name);
  return {
    placement,
    unitsPerToken: spans.length,
    handoffsPerToken: spans.length - 1,
    handoffBytesPerToken: cut.residualElements * 4,
    weightBytesByDevice,
    units: spans.map((s) => ({ ...s, blocks: compact(names(s)) })),
  };
}

function compact(names: readonly string[]): string {
  const layers = names.filter((n) => n.startsWith("layer ")).map((n) => Number(n.slice(6)));
  const out: string[] = [];
  if (names.includes("embed")) out.push("embed");
  if (layers.length > 0)
    out.push(layers.length === 1 ? `layer ${layers[0]}` : `layers ${layers[0]}-${layers[layers.length - 1]}`);
  if (names.includes("head")) out.push("head");
  return out.join(", ");
}

/** The cut of an already traced graph, for commands that trace themselves. */
export function cutOfGraph(g: Graph, command: string, model: string): BlockCut {
  return cliErrors(command, model, () => findBlocks(g));
}
