// `poot bench MODEL --prompt-tokens P --gen-tokens G`: times prefill and decode through the runtime on a
// backend (median of several runs, seeded random prompt ids) and prints a table or JSON.
import * as os from "node:os";
import { Engine, Rng, RuntimeError, argmax, type PagerStats, type PlacementReport } from "@poot/runtime";
import { LoadedModel, ModelError, type PagedLayout } from "@poot/models";
import { CpuExecutor } from "@poot/backend-cpu";
import { measureBandwidth } from "./bandwidth.js";
import { CliError } from "../errors.js";
import {
  BACKEND_NAMES,
  createExecutor,
  executorSettings,
  horizontalFusion,
  loweringCache,
  measureFloorBandwidth,
} from "./backends.js";
import { planDevices, describePlacement, engineDevices, placementOptions, type PlacementFlags } from "@poot/serve";
import type { CommandModule } from "./index.js";
import { parseNumber } from "./numbers.js";
import { progressBar } from "./progress.js";
import { CollectiveMeter, describeTensorParallel, type TensorParallelBench } from "./bench-tp.js";

/** What `poot bench` measures. */
/** Which kernels ran a CPU bench's decode: the native GEMVs (decision 0952) and their dispatches per token, or Wasm only. */
function cpuKernels(cpu: CpuExecutor, nativePerToken: readonly number[]): string {
  if (cpu.native === null) return "Wasm SIMD128 only (no native kernels here, or POOT_CPU_NATIVE=0)";
  return `native ${cpu.native.isa} GEMVs (${nativePerToken.length > 0 ? median([...nativePerToken]) : 0} dispatches/token, ${cpu.native.path}) + Wasm SIMD128`;
}

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

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The `bench` subcommand. */
export const bench: CommandModule = {
  name: "bench",
  register: (program, io) => {
    placementOptions(program.command("bench"))
      .description("time prefill and decode on a backend (median of several runs)")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .option("--backend <name>", `where to run: ${BACKEND_NAMES.join(" | ")}`, "auto")
      .option("--prompt-tokens <n>", "prompt length (random ids, seeded)", "128")
      .option(
        "--gen-tokens <n>",
        "tokens to generate (greedy, EOS ignored; decode rates count the steps after the first)",
        "64",
      )
      .option("--runs <n>", "timed runs after one warm-up", "3")
      .option("--weights <kind>", "HF folders: f32 or bf16", "f32")
      .option("--prefill-chunk <n>", "largest prefill step in tokens (a power of two)", "64")
      .option(
        "--decode-loop <mode>",
        "auto (the device greedy loop where the backend has one) | steps (one host step a token) | host-launches",
        "auto",
      )
      .option("--tokens-per-launch <n>", "decode steps per launch of a greedy loop", "8")
      .option("--horizontal-fusion <mode>", "grouped (default: q/k/v as one dispatch) | shared-epilogue (a baseline)")
      .option("-t, --threads <n>", "CPU backend: worker threads (default: one per core)")
      .option("--json", "print JSON instead of a table")
      .action(
        async (
          model: string,
          o: PlacementFlags & {
            backend: string;
            promptTokens: string;
            genTokens: string;
            runs: string;
            weights: string;
            prefillChunk: string;
            horizontalFusion?: string;
            decodeLoop: string;
            tokensPerLaunch: string;
            threads?: string;
            json?: boolean;
          },
        ) => {
          const P = parseNumber("--prompt-tokens", o.promptTokens, "int", "bench");
          const G = parseNumber("--gen-tokens", o.genTokens, "int", "bench");
          const runs = parseNumber("--runs", o.runs, "int", "bench");
          const prefillChunk = parseNumber("--prefill-chunk", o.prefillChunk, "int", "bench");
          const tokensPerLaunch = parseNumber("--tokens-per-launch", o.tokensPerLaunch, "int", "bench");
          if (tokensPerLaunch < 1)
            throw new CliError("bad-input", "--tokens-per-launch must be >= 1", { command: "bench" });
          const loopMode = o.decodeLoop;
          if (loopMode !== "auto" && loopMode !== "steps" && loopMode !== "host-launches")
            throw new CliError("bad-input", `--decode-loop must be auto, steps or host-launches, got "${loopMode}"`, {
              command: "bench",
            });
          if (P < 1 || G < 2 || runs < 1)
            throw new CliError("bad-input", "--prompt-tokens >= 1, --gen-tokens >= 2 and --runs >= 1 are required", {
              command: "bench",
            });
          if (o.weights !== "f32" && o.weights !== "bf16")
            throw new CliError("bad-input", `--weights must be f32 or bf16, got "${o.weights}"`, { command: "bench" });
          const weights: "f32" | "bf16" = o.weights;
          if (o.threads !== undefined) {
            const threads = parseNumber("--threads", o.threads, "int", "bench");
            if (threads < 1)
              throw new CliError("bad-input", `--threads must be >= 1, got ${threads}`, { command: "bench" });
            executorSettings.threads = threads;
          }
          const fusion = horizontalFusion(o.horizontalFusion, "bench");
          const cache = loweringCache((m) => io.err(`${m}\n`));
          const make = (n: string, c: string) => createExecutor(n, c, fusion, cache);
          const { plan, placed } = planDevices(o, o.backend, model, weights, "bench", BACKEND_NAMES, make);
          const executor = placed.executor;
          let engine: Engine | null = null;
          try {
            const m = LoadedModel.open(model, { weights });
            engine = new Engine(m, {
              executor,
              context: P + G,
              tokenizer: null,
              prefillChunk,
              maxSequences: 1,
              greedyLoop: loopMode,
              greedyTokensPerLaunch: tokensPerLaunch,
              ...engineDevices(plan, placed, make),
            });
            const e = engine;
            const rng = new Rng(1);
            const prompt = Array.from({ length: P }, () => Math.floor(rng.next() * e.config.vocabSize));
            const bar = progressBar("bench  ", runs + 1);
            const handoffs: number[] = [];
            const stall: number[] = [],
              readWait: number[] = [],
              pageInsPerToken: number[] = [];
            const pre: number[] = [],
              dec: number[] = [],
              ms: number[] = [],
              cpuPre: number[] = [],
              cpuDec: number[] = [],
              ttft: number[] = [],
              perToken: number[] = [],
              graphsPerToken: number[] = [],
              hostMs: number[] = [],
              regs: number[] = [],
              natives: number[] = [];
            let stateBytes = 0;
            const cpu = executor instanceof CpuExecutor ? executor : null;
            const dispatches = (): number | null => executor.dispatchesSubmitted?.() ?? null;
            const graphs = (): number | null => executor.graphLaunchesSubmitted?.() ?? null;
            const waited = (): number | null => executor.hostWaitMs?.() ?? null;
            const collectives = new CollectiveMeter(executor);
            let launches = 0;
            const cpuMs = () => {
              const u = process.cpuUsage();
              return (u.user + u.system) / 1000;
            };
            for (let r = 0; r <= runs; r++) {
              const s = e.openSession();
              const w0 = performance.now(),
                c0 = cpuMs();
              const logits = s.step(prompt);
              const w1p = performance.now(),
                c1p = cpuMs();
              // Counter reads sit outside both timed intervals (on wgpu each is a worker round trip).
              const d1 = dispatches(),
                g1 = graphs(),
                l1 = e.stats.greedyLaunches,
                r1 = cpu?.stats().regions,
                n1 = cpu?.stats().nativeDispatches,
                h1 = e.pipelineStats?.handoffs,
                p1 = e.pagerStats === null ? null : { ...e.pagerStats };
              const q1 = waited();
              collectives.begin();
              const w1 = performance.now(),
                c1 = cpuMs();
              // G - 1 greedy steps after the first token (on the device where the backend has a greedy loop).
              e.greedy(s, argmax(logits), G - 1);
              const w2 = performance.now(),
                c2 = cpuMs();
              const q2 = waited();
              collectives.end(G - 1, r > 0);
              launches = e.stats.greedyLaunches - l1;
              // Steps the device ran: a greedy loop runs whole launches (a few past the last token, rolled back).
              const steps = launches > 0 ? launches * tokensPerLaunch : G - 1;
              const g2 = graphs();
              const d2 = dispatches(),
                r2 = cpu?.stats().regions,
                n2 = cpu?.stats().nativeDispatches,
                h2 = e.pipelineStats?.handoffs,
                p2 = e.pagerStats === null ? null : { ...e.pagerStats };
              stateBytes = placed.devices.reduce((n, d) => n + d.executor.deviceBytes().state, 0);
              s.release();
              bar?.update(r + 1);
              // Run 0 warms up (stages programs, binds weights).
              if (r === 0) continue;
              if (d1 !== null && d2 !== null) perToken.push((d2 - d1) / steps);
              if (g1 !== null && g2 !== null) graphsPerToken.push((g2 - g1) / (G - 1));
              if (q1 !== null && q2 !== null) hostMs.push((w2 - w1 - (q2 - q1)) / (G - 1));
              if (r1 !== undefined && r2 !== undefined) regs.push((r2 - r1) / (G - 1));
              if (h1 !== undefined && h2 !== undefined) handoffs.push((h2 - h1) / (G - 1));
              if (p1 !== null && p2 !== null) {
                stall.push((p2.stallMs - p1.stallMs) / (G - 1));
                readWait.push((p2.readWaitMs - p1.readWaitMs) / (G - 1));
                pageInsPerToken.push((p2.pageIns - p1.pageIns) / (G - 1));
              }
              if (n1 !== undefined && n2 !== undefined) natives.push((n2 - n1) / (G - 1));
              pre.push((P / (w1p - w0)) * 1000);
              dec.push(((G - 1) / (w2 - w1)) * 1000);
              ms.push((w2 - w1) / (G - 1));
              ttft.push(w1p - w0);
              cpuPre.push((P / (c1p - c0)) * 1000);
              cpuDec.push(((G - 1) / (c2 - c1)) * 1000);
            }
            bar?.stop();
            if (perToken.some((d) => d !== perToken[0]))
              throw new CliError(
                "command-failed",
                `dispatches per decode token differ between runs: ${perToken.join(", ")}`,
                { command: "bench" },
              );
            // Every device's bytes: a split model holds weights and State on each.
            const deviceBytes = placed.devices
              .map((d) => d.executor.deviceBytes())
              .reduce((a, b) => ({
                weights: a.weights + b.weights,
                state: a.state + b.state,
                io: a.io + b.io,
                total: a.total + b.total,
              }));
            // The State holds `context` = P + G positions; the timed steps read positions up to P + 1 ... P + G - 1.
            const meanLive = P + G / 2;
            const bytesPerToken = deviceBytes.weights + (stateBytes / (P + G)) * meanLive;
            const decodeMsPerToken = median(ms);
            // The floor: the device's own copy bandwidth (CUDA), or the host's for the CPU backend; measured now.
            const copyGBps =
              cpu !== null
                ? (await measureBandwidth(os.availableParallelism())).bytesPerSecond / 1e9
                : measureFloorBandwidth(executor);
            const report: BenchReport = {
              model,
              backend: o.backend,
              promptTokens: P,
              genTokens: G,
              runs,
              prefillTokS: median(pre),
              decodeTokS: median(dec),
              decodeMsPerToken,
              prefillTokPerCpuS: median(cpuPre),
              decodeTokPerCpuS: median(cpuDec),
              stageMs: e.stats.stageMs,
              decodeDispatchesPerToken: perToken[0] ?? null,
              graphLaunchesPerToken: graphsPerToken.length > 0 ? median(graphsPerToken) : null,
              hostMsPerToken: hostMs.length > 0 ? median(hostMs) : null,
              decodeLoop: launches === 0 ? "steps" : loopMode === "host-launches" ? "host-launches" : "device-loop",
              tokensPerLaunch: launches === 0 ? 1 : tokensPerLaunch,
              kvLayout: e.paged,
              regionsPerToken: regs.length > 0 ? median(regs) : null,
              tensorParallel: collectives.report(median),
              cpuKernels: cpu === null ? null : cpuKernels(cpu, natives),
              loadAverage: os.loadavg()[0]!,
              deviceBytes,
              timeToFirstTokenMs: median(ttft),
              bytesPerToken,
              placement:
                plan === null
                  ? null
                  : {
                      ...e.placementReport()!,
                      measuredHandoffsPerToken: median(handoffs),
                      ...(plan.chosen === undefined ? {} : { chosen: plan.chosen }),
                    },
              paging:
                e.pagerStats === null || e.pagerStats.pageIns === 0
                  ? null
                  : {
                      ...e.pagerStats,
                      prefetch: plan?.prefetch ?? true,
                      decodePageInsPerToken: median(pageInsPerToken),
                      decodeStallMsPerToken: median(stall),
                      decodeReadWaitMsPerToken: median(readWait),
                    },
              floor: copyGBps === null ? null : bandwidthFloor(copyGBps, bytesPerToken, decodeMsPerToken),
            };
            if (o.json === true) io.out(`${JSON.stringify(report, null, 2)}\n`);
            else {
              io.out(`model ${model} on ${o.backend}: prompt ${P}, generate ${G}, median of ${runs}\n`);
              io.out(
                `  prefill ${report.prefillTokS.toFixed(2)} tok/s (${report.prefillTokPerCpuS.toFixed(2)} per CPU-second)\n`,
              );
              io.out(`  time to first token ${report.timeToFirstTokenMs.toFixed(2)} ms\n`);
              io.out(
                `  decode  ${report.decodeTokS.toFixed(2)} tok/s (${report.decodeMsPerToken.toFixed(3)} ms/token; ${report.decodeTokPerCpuS.toFixed(2)} per CPU-second)${report.decodeDispatchesPerToken !== null ? `, ${report.decodeDispatchesPerToken} dispatches/token${report.regionsPerToken !== null ? ` in ${report.regionsPerToken} region(s)` : ""}` : ""}\n`,
              );
              if (
                report.decodeLoop !== "steps" ||
                report.graphLaunchesPerToken !== null ||
                report.hostMsPerToken !== null
              )
                io.out(
                  `  decode loop ${report.decodeLoop}${report.decodeLoop === "steps" ? "" : ` (${report.tokensPerLaunch} steps a launch)`}${[
                    report.graphLaunchesPerToken === null
                      ? ""
                      : `, ${report.graphLaunchesPerToken.toFixed(3)} graph launches/token`,
                    report.hostMsPerToken === null ? "" : `, host ${report.hostMsPerToken.toFixed(3)} ms/token`,
                  ].join("")}\n`,
                );
              if (report.cpuKernels !== null) io.out(`  kernels ${report.cpuKernels}\n`);
              if (report.tensorParallel !== null) io.out(describeTensorParallel(report.tensorParallel));
              if (report.placement === null)
                io.out(`  placement: every block on ${o.backend} as one program (1 unit, 0 hand-offs per token)\n`);
              else
                io.out(
                  `${describePlacement(report.placement)
                    .map((l) => `  ${l}`)
                    .join("\n")}\n  hand-offs counted: ${report.placement.measuredHandoffsPerToken} per decode token\n`,
                );
              const pg = report.paging;
              if (pg !== null)
                io.out(
                  `  paging: ${pg.pageIns} page-ins (${(pg.pageInBytes / 1e6).toFixed(1)} MB read), ${pg.pageOuts} page-outs, ${pg.stallMs.toFixed(0)} ms stalled on page-ins (${pg.readWaitMs.toFixed(0)} ms of it on weight reads); prefetch ${pg.prefetch ? `on: ${pg.prefetches} blocks read ahead (${(pg.prefetchedBytes / 1e6).toFixed(1)} MB)` : "off"}\n  paging per decode token: ${pg.decodePageInsPerToken} page-ins, ${pg.decodeStallMsPerToken.toFixed(0)} ms stalled, ${pg.decodeReadWaitMsPerToken.toFixed(0)} ms of it on weight reads\n`,
                );
              io.out(`  bytes/token ${(report.bytesPerToken / 1e6).toFixed(1)} MB (weights + live KV)\n`);
              const f = report.floor;
              if (f !== null)
                io.out(
                  `  floor: copy ${f.copyGBps.toFixed(0)} GB/s -> ${f.floorMsPerToken.toFixed(3)} ms/token; decode reads ${f.decodeGBps.toFixed(f.decodeGBps < 10 ? 2 : 0)} GB/s = ${(100 * f.fractionOfFloor).toFixed(1)}% of the floor\n`,
                );
              io.out(
                `  load average ${report.loadAverage.toFixed(2)}, staging ${report.stageMs.toFixed(0)} ms, device bytes ${report.deviceBytes.total} (weights ${report.deviceBytes.weights}, state ${report.deviceBytes.state})\n`,
              );
            }
          } catch (err) {
            if (err instanceof ModelError)
              throw new CliError(err.code === "io" ? "file-unreadable" : "bad-input", err.message, {
                command: "bench",
                file: err.file ?? model,
              });
            if (err instanceof RuntimeError)
              throw new CliError("bad-input", err.message, { command: "bench", file: model });
            throw err;
          } finally {
            engine?.close();
            placed.dispose();
          }
        },
      );
  },
};
