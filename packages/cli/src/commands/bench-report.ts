// What `poot bench` measures (its JSON) and the table it prints of it.
import type { PagerStats, PlacementReport } from "@poot/runtime";
import type { PagedLayout } from "@poot/models";
import { describePlacement } from "@poot/serve";
import { describeTensorParallel, type TensorParallelBench } from "./bench-tp.js";

/** What `poot bench` measures. */
export interface BenchReport {
  readonly model: string;
  readonly backend: string;
  readonly promptTokens: number;
  readonly genTokens: number;
  readonly runs: number;
  /** Median prefill throughput, tokens/s. */
  readonly prefillTokS: number;
  /** Median decode throughput, tokens/s (steps after the first token). */
  readonly decodeTokS: number;
  /** Median decode milliseconds per token. */
  readonly decodeMsPerToken: number;
  /** Median prefill tokens per CPU-second of this process (robust to a busy machine; counts every thread). */
  readonly prefillTokPerCpuS: number;
  /** Median decode tokens per CPU-second of this process. */
  readonly decodeTokPerCpuS: number;
  /** Milliseconds spent tracing and staging programs (once). */
  readonly stageMs: number;
  /** One-minute load average when the runs ended (the machine may be shared). */
  readonly loadAverage: number;
  /**
   * Kernel dispatches submitted per decode step (with the device greedy loop: the step's kernels and its argmax
   * kernel, over every step a launch ran), counted by the executor around the timed decode steps (equal in
   * every run, else an error); null when the backend does not count launches. `poot compile --explain` predicts it
   * for the graph that ran: `--mode decode --context P+G --page-size kvLayout.pageSize --pages kvLayout.pages`.
   */
  readonly decodeDispatchesPerToken: number | null;
  /**
   * Device submissions (CUDA graph launches) per decode token around the timed steps: 1 when every step replays
   * its captured graph, 1/k with the device greedy loop's k steps per launch; null when the backend does not count.
   */
  readonly graphLaunchesPerToken: number | null;
  /**
   * Median host milliseconds per decode token: wall time minus the time the host was blocked waiting for the
   * device (what the runtime, the executor and the driver calls cost between tokens); null when the backend does
   * not count its waits.
   */
  readonly hostMsPerToken: number | null;
  /** How decode ran: `device-loop` (argmax and next inputs on the device, decision 2201) or `steps` (one host step a token). */
  readonly decodeLoop: "device-loop" | "host-launches" | "steps";
  /** Decode steps per launch of the greedy loop (1 for `steps`). */
  readonly tokensPerLaunch: number;
  /** The paged KV layout the runtime traced the decode graph with (one sequence: `lanes` is 1, `--batch 1`). */
  readonly kvLayout: PagedLayout;
  /** Device bytes after the runs (weights, state, io). */
  readonly deviceBytes: {
    readonly weights: number;
    readonly state: number;
    readonly io: number;
    readonly total: number;
  };
  /** Median milliseconds from the prompt to the first token's logits (the whole prefill). */
  readonly timeToFirstTokenMs: number;
  /**
   * Bytes a decode step must read at least, averaged over the timed steps: every weight once plus the live
   * part of the State (the KV cache up to the current position).
   */
  readonly bytesPerToken: number;
  /** The measured bandwidth floor, on backends that can measure it (null elsewhere). */
  readonly floor: BandwidthFloor | null;
  /** With `--tp N`: collectives per decode token and their time; null for one executor. */
  readonly tensorParallel: TensorParallelBench | null;
  /** Host regions (thread joins) per decode token on the cpu backend, else null. */
  readonly regionsPerToken: number | null;
  /** CPU backend: which kernels ran decode (native GEMVs with their share of the dispatches, and Wasm); null elsewhere. */
  readonly cpuKernels: string | null;
  /**
   * With a placement flag, or a default placement that split the model (decision 1705): where the blocks ran (units
   * and hand-offs per token, weight bytes per device), the hand-offs counted per decode token and, for the default,
   * how it was chosen; null when the model ran as one program on --backend.
   */
  readonly placement:
    | (PlacementReport & { readonly measuredHandoffsPerToken: number; readonly chosen?: string })
    | null;
  /** With a budget below the weights: the pager's counters over the whole bench (warm-up included); else null. */
  readonly paging:
    | (PagerStats & {
        /** Whether the next block's weights were read ahead (`--no-prefetch` turns it off). */
        readonly prefetch: boolean;
        /** Page-ins per timed decode token (median of the runs). */
        readonly decodePageInsPerToken: number;
        /** Milliseconds of page-in stall per timed decode token (median). */
        readonly decodeStallMsPerToken: number;
        /** The part of it spent reading weights or waiting for weights read ahead (median). */
        readonly decodeReadWaitMsPerToken: number;
      })
    | null;
}

/** A decode rate against the device's own copy bandwidth. */
export interface BandwidthFloor {
  /** Device-to-device copy bandwidth, (read + write) GB/s, measured in the same run. */
  readonly copyGBps: number;
  /** bytesPerToken at the copy bandwidth: the fastest a decode step could be, ms. */
  readonly floorMsPerToken: number;
  /** floorMsPerToken / decodeMsPerToken (1 = at the floor). */
  readonly fractionOfFloor: number;
  /** bytesPerToken / decodeMsPerToken, GB/s. */
  readonly decodeGBps: number;
}

/** The floor of a decode step that reads `bytesPerToken` at `copyGBps`, against its measured ms per token. */
export function bandwidthFloor(copyGBps: number, bytesPerToken: number, decodeMsPerToken: number): BandwidthFloor {
  const floorMsPerToken = (bytesPerToken / (copyGBps * 1e9)) * 1e3;
  return {
    copyGBps,
    floorMsPerToken,
    fractionOfFloor: floorMsPerToken / decodeMsPerToken,
    decodeGBps: bytesPerToken / (decodeMsPerToken * 1e-3) / 1e9,
  };
}

/** The table `poot bench` prints of a report (lines ending in newlines). */
export function formatBenchReport(report: BenchReport): string {
  const out: string[] = [];
  out.push(
    `model ${report.model} on ${report.backend}: prompt ${report.promptTokens}, generate ${report.genTokens}, median of ${report.runs}\n`,
  );
  out.push(
    `  prefill ${report.prefillTokS.toFixed(2)} tok/s (${report.prefillTokPerCpuS.toFixed(2)} per CPU-second)\n`,
  );
  out.push(`  time to first token ${report.timeToFirstTokenMs.toFixed(2)} ms\n`);
  out.push(
    `  decode  ${report.decodeTokS.toFixed(2)} tok/s (${report.decodeMsPerToken.toFixed(3)} ms/token; ${report.decodeTokPerCpuS.toFixed(2)} per CPU-second)${report.decodeDispatchesPerToken !== null ? `, ${report.decodeDispatchesPerToken} dispatches/token${report.regionsPerToken !== null ? ` in ${report.regionsPerToken} region(s)` : ""}` : ""}\n`,
  );
  if (report.decodeLoop !== "steps" || report.graphLaunchesPerToken !== null || report.hostMsPerToken !== null)
    out.push(
      `  decode loop ${report.decodeLoop}${report.decodeLoop === "steps" ? "" : ` (${report.tokensPerLaunch} steps a launch)`}${[
        report.graphLaunchesPerToken === null
          ? ""
          : `, ${report.graphLaunchesPerToken.toFixed(3)} graph launches/token`,
        report.hostMsPerToken === null ? "" : `, host ${report.hostMsPerToken.toFixed(3)} ms/token`,
      ].join("")}\n`,
    );
  if (report.cpuKernels !== null) out.push(`  kernels ${report.cpuKernels}\n`);
  if (report.tensorParallel !== null) out.push(describeTensorParallel(report.tensorParallel));
  if (report.placement === null)
    out.push(`  placement: every block on ${report.backend} as one program (1 unit, 0 hand-offs per token)\n`);
  else
    out.push(
      `${describePlacement(report.placement)
        .map((l) => `  ${l}`)
        .join("\n")}\n  hand-offs counted: ${report.placement.measuredHandoffsPerToken} per decode token\n`,
    );
  const pg = report.paging;
  if (pg !== null)
    out.push(
      `  paging: ${pg.pageIns} page-ins (${(pg.pageInBytes / 1e6).toFixed(1)} MB read), ${pg.pageOuts} page-outs, ${pg.stallMs.toFixed(0)} ms stalled on page-ins (${pg.readWaitMs.toFixed(0)} ms of it on weight reads); prefetch ${pg.prefetch ? `on: ${pg.prefetches} blocks read ahead (${(pg.prefetchedBytes / 1e6).toFixed(1)} MB)` : "off"}\n  paging per decode token: ${pg.decodePageInsPerToken} page-ins, ${pg.decodeStallMsPerToken.toFixed(0)} ms stalled, ${pg.decodeReadWaitMsPerToken.toFixed(0)} ms of it on weight reads\n`,
    );
  out.push(`  bytes/token ${(report.bytesPerToken / 1e6).toFixed(1)} MB (weights + live KV)\n`);
  const f = report.floor;
  if (f !== null)
    out.push(
      `  floor: copy ${f.copyGBps.toFixed(0)} GB/s -> ${f.floorMsPerToken.toFixed(3)} ms/token; decode reads ${f.decodeGBps.toFixed(f.decodeGBps < 10 ? 2 : 0)} GB/s = ${(100 * f.fractionOfFloor).toFixed(1)}% of the floor\n`,
    );
  out.push(
    `  load average ${report.loadAverage.toFixed(2)}, staging ${report.stageMs.toFixed(0)} ms, device bytes ${report.deviceBytes.total} (weights ${report.deviceBytes.weights}, state ${report.deviceBytes.state})\n`,
  );
  return out.join("");
}
