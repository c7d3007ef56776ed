// `poot bench MODEL --prompt-tokens P --gen-tokens G`: times prefill and decode through the runtime on a
// backend (median of several runs, seeded random prompt ids) and prints a table or JSON.
import * as os from "node:os";
import { Engine, Rng, RuntimeError, argmax } from "@poot/runtime";
import { LoadedModel, ModelError, type ActivationNumerics } from "@poot/models";
import type { CompileOptions } from "@poot/graph-plan";
import { CpuExecutor } from "@poot/backend-cpu";
import type { Executor } from "@poot/executor";
import { measureBandwidth } from "./bandwidth.js";
import { CliError } from "../errors.js";
import {
  BACKEND_NAMES,
  createExecutor,
  executorSettings,
  setNumerics,
  horizontalFusion,
  loweringCache,
  measureFloorBandwidth,
} from "./backends.js";
import {
  activationsOption,
  numericsOption,
  engineDevices,
  parseActivations,
  parseNumerics,
  placementOptions,
  planDevices,
  type PlacementFlags,
} from "@poot/serve";
import type { CommandModule } from "./index.js";
import { parseNumber } from "./numbers.js";
import { progressBar } from "./progress.js";
import { CollectiveMeter } from "./bench-tp.js";
import { bandwidthFloor, formatBenchReport, type BenchReport } from "./bench-report.js";

/** Which kernels ran a CPU bench's decode: the native GEMVs (decision 0952) and their dispatches per token, or Wasm only. */
function cpuKernels(cpu: CpuExecutor, nativePerToken: readonly number[]): string {
  if (cpu.native === null) return "Wasm SIMD128 only (no native kernels here, or POOT_CPU_NATIVE=0)";
  return `native ${cpu.native.isa} GEMVs (${nativePerToken.length > 0 ? median([...nativePerToken]) : 0} dispatches/token, ${cpu.native.path}) + Wasm SIMD128`;
}

/** The median of `xs`. */
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** `poot bench` options as commander parses them. */
type BenchOptions = PlacementFlags & {
  backend: string;
  promptTokens: string;
  genTokens: string;
  runs: string;
  weights: string;
  activations?: string;
  prefillChunk: string;
  horizontalFusion?: string;
  decodeLoop: string;
  tokensPerLaunch: string;
  threads?: string;
  numerics?: string;
  json?: boolean;
};

/**
 * Checks `poot bench`'s flag values without side effects: the CLI calls it before `--backend auto` probes the
 * backends, and the action again (which then applies --threads and --numerics).
 */
function checkBenchFlags(o: BenchOptions): {
  readonly P: number;
  readonly G: number;
  readonly runs: number;
  readonly prefillChunk: number;
  readonly tokensPerLaunch: number;
  readonly loopMode: "auto" | "steps" | "host-launches";
  readonly weights: "f32" | "bf16";
  readonly activations: ActivationNumerics;
  readonly threads: number | undefined;
  readonly fusion: CompileOptions;
} {
  const command = "bench";
  const P = parseNumber("--prompt-tokens", o.promptTokens, "int", command);
  const G = parseNumber("--gen-tokens", o.genTokens, "int", command);
  const runs = parseNumber("--runs", o.runs, "int", command);
  const prefillChunk = parseNumber("--prefill-chunk", o.prefillChunk, "int", command);
  const tokensPerLaunch = parseNumber("--tokens-per-launch", o.tokensPerLaunch, "int", command);
  if (tokensPerLaunch < 1) throw new CliError("bad-input", "--tokens-per-launch must be >= 1", { command });
  const loopMode = o.decodeLoop;
  if (loopMode !== "auto" && loopMode !== "steps" && loopMode !== "host-launches")
    throw new CliError("bad-input", `--decode-loop must be auto, steps or host-launches, got "${loopMode}"`, {
      command,
    });
  if (P < 1 || G < 2 || runs < 1)
    throw new CliError("bad-input", "--prompt-tokens >= 1, --gen-tokens >= 2 and --runs >= 1 are required", {
      command,
    });
  if (o.weights !== "f32" && o.weights !== "bf16")
    throw new CliError("bad-input", `--weights must be f32 or bf16, got "${o.weights}"`, { command });
  const weights: "f32" | "bf16" = o.weights;
  const activations = parseActivations(o.activations, command);
  let threads: number | undefined;
  if (o.threads !== undefined) {
    threads = parseNumber("--threads", o.threads, "int", command);
    if (threads < 1) throw new CliError("bad-input", `--threads must be >= 1, got ${threads}`, { command });
  }
  parseNumerics(o.numerics, command);
  const fusion = horizontalFusion(o.horizontalFusion, command);
  return { P, G, runs, prefillChunk, tokensPerLaunch, loopMode, weights, activations, threads, fusion };
}

/** The `bench` subcommand. */
export const bench: CommandModule = {
  name: "bench",
  checkFlags: (options) => void checkBenchFlags(options as unknown as BenchOptions),
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
      .addOption(activationsOption())
      .option("--prefill-chunk <n>", "largest prefill step in tokens (a power of two)", "64")
      .option(
        "--decode-loop <mode>",
        "auto (the device greedy loop where the backend has one) | steps (one host step a token) | host-launches",
        "auto",
      )
      .option("--tokens-per-launch <n>", "decode steps per launch of a greedy loop", "8")
      .option("--horizontal-fusion <mode>", "grouped (default: q/k/v as one dispatch) | shared-epilogue (a baseline)")
      .option("-t, --threads <n>", "CPU backend: worker threads (default: one per core)")
      .addOption(numericsOption())
      .option("--json", "print JSON instead of a table")
      .action(async (model: string, o: BenchOptions) => {
        const { P, G, runs, prefillChunk, tokensPerLaunch, loopMode, weights, activations, threads, fusion } =
          checkBenchFlags(o);
        if (threads !== undefined) executorSettings.threads = threads;
        setNumerics(o.numerics, "bench");
        const cache = loweringCache((m) => io.err(`${m}\n`));
        const make = (n: string, c: string) => createExecutor(n, c, fusion, cache);
        const { plan, placed } = planDevices(o, o.backend, model, weights, "bench", BACKEND_NAMES, make);
        const executor = placed.executor;
        let engine: Engine | null = null;
        try {
          const m = LoadedModel.open(model, { weights, activations });
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
          // Every executor that runs blocks: the placed devices' and, when blocks are paged, the pager's.
          const executors = (): Executor[] => [
            ...new Set([executor, ...placed.devices.map((d) => d.executor), ...(e.pipeline?.pager?.executors ?? [])]),
          ];
          const total = (count: (x: Executor) => number | undefined): number | null =>
            executors().reduce<number | null>((n, x) => {
              const v = count(x);
              return v === undefined ? n : (n ?? 0) + v;
            }, null);
          const cpuTotal = (key: "regions" | "nativeDispatches"): number | undefined =>
            cpu === null ? undefined : (total((x) => (x instanceof CpuExecutor ? x.stats()[key] : undefined)) ?? 0);
          const dispatches = (): number | null => total((x) => x.dispatchesSubmitted?.());
          const graphs = (): number | null => total((x) => x.graphLaunchesSubmitted?.());
          const waited = (): number | null => total((x) => x.hostWaitMs?.());
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
              r1 = cpuTotal("regions"),
              n1 = cpuTotal("nativeDispatches"),
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
              r2 = cpuTotal("regions"),
              n2 = cpuTotal("nativeDispatches"),
              h2 = e.pipelineStats?.handoffs,
              p2 = e.pagerStats === null ? null : { ...e.pagerStats };
            stateBytes = executors().reduce((n, x) => n + x.deviceBytes().state, 0);
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
          // Every executor's bytes: a split model holds weights and State on each device, a paged one on the pager's.
          const deviceBytes = executors()
            .map((x) => x.deviceBytes())
            .reduce((a, b) => ({
              weights: a.weights + b.weights,
              state: a.state + b.state,
              io: a.io + b.io,
              total: a.total + b.total,
            }));
          // The State holds `context` = P + G positions; the timed steps read positions up to P + 1 ... P + G - 1.
          const meanLive = P + G / 2;
          // Every block's weights are read once a token, those of paged blocks too (the budget holds only some).
          const placedWeights = e.placementReport()?.weightBytesByDevice;
          const weightBytes =
            placedWeights === undefined ? deviceBytes.weights : Object.values(placedWeights).reduce((a, b) => a + b, 0);
          const bytesPerToken = weightBytes + (stateBytes / (P + G)) * meanLive;
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
          io.out(o.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatBenchReport(report));
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
      });
  },
};
