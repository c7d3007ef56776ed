// `poot bench MODEL --prompt-tokens P --gen-tokens G`: times prefill and decode through the runtime on a
// backend (median of several runs, seeded random prompt ids) and prints a table or JSON.
import * as os from "node:os";
import { Engine, Rng, RuntimeError, argmax } from "@poot/runtime";
import { LoadedModel, ModelError } from "@poot/models";
import { CliError } from "../errors.js";
import { createExecutor } from "./backends.js";
import type { CommandModule } from "./index.js";
import { parseNumber } from "./numbers.js";
import { progressBar } from "./progress.js";

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
  /** Device bytes after the runs (weights, state, io). */
  readonly deviceBytes: { readonly weights: number; readonly state: number; readonly io: number; readonly total: number };
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
    program
      .command("bench")
      .description("time prefill and decode on a backend (median of several runs)")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .option("--backend <name>", "where to run", "eval")
      .option("--prompt-tokens <n>", "prompt length (random ids, seeded)", "128")
      .option("--gen-tokens <n>", "tokens to generate (greedy, EOS ignored; decode rates count the steps after the first)", "64")
      .option("--runs <n>", "timed runs after one warm-up", "3")
      .option("--weights <kind>", "HF folders: f32 or bf16", "f32")
      .option("--json", "print JSON instead of a table")
      .action((model: string, o: { backend: string; promptTokens: string; genTokens: string; runs: string; weights: string; json?: boolean }) => {
        const P = parseNumber("--prompt-tokens", o.promptTokens, "int", "bench");
        const G = parseNumber("--gen-tokens", o.genTokens, "int", "bench");
        const runs = parseNumber("--runs", o.runs, "int", "bench");
        if (P < 1 || G < 2 || runs < 1) throw new CliError("bad-input", "--prompt-tokens >= 1, --gen-tokens >= 2 and --runs >= 1 are required", { command: "bench" });
        if (o.weights !== "f32" && o.weights !== "bf16") throw new CliError("bad-input", `--weights must be f32 or bf16, got "${o.weights}"`, { command: "bench" });
        const weights: "f32" | "bf16" = o.weights;
        const executor = createExecutor(o.backend, "bench");
        let engine: Engine | null = null;
        try {
          const m = LoadedModel.open(model, { weights });
          engine = new Engine(m, { executor, context: P + G, tokenizer: null, maxSequences: 1 });
          const e = engine;
          const rng = new Rng(1);
          const prompt = Array.from({ length: P }, () => Math.floor(rng.next() * e.config.vocabSize));
          const bar = progressBar("bench  ", runs + 1);
          const pre: number[] = [], dec: number[] = [], ms: number[] = [], cpuPre: number[] = [], cpuDec: number[] = [];
          const cpuMs = () => {
            const u = process.cpuUsage();
            return (u.user + u.system) / 1000;
          };
          for (let r = 0; r <= runs; r++) {
            const s = e.openSession();
            const w0 = performance.now(), c0 = cpuMs();
            let logits = s.step(prompt);
            const w1 = performance.now(), c1 = cpuMs();
            for (let k = 1; k < G; k++) logits = s.step([argmax(logits)]);
            const w2 = performance.now(), c2 = cpuMs();
            s.release();
            bar?.update(r + 1);
            // Run 0 warms up (stages programs, binds weights).
            if (r === 0) continue;
            pre.push((P / (w1 - w0)) * 1000);
            dec.push(((G - 1) / (w2 - w1)) * 1000);
            ms.push((w2 - w1) / (G - 1));
            cpuPre.push((P / (c1 - c0)) * 1000);
            cpuDec.push(((G - 1) / (c2 - c1)) * 1000);
          }
          bar?.stop();
          const report: BenchReport = {
            model, backend: o.backend, promptTokens: P, genTokens: G, runs,
            prefillTokS: median(pre), decodeTokS: median(dec), decodeMsPerToken: median(ms), prefillTokPerCpuS: median(cpuPre), decodeTokPerCpuS: median(cpuDec), stageMs: e.stats.stageMs, loadAverage: os.loadavg()[0]!, deviceBytes: executor.deviceBytes(),
          };
          if (o.json === true) io.out(`${JSON.stringify(report, null, 2)}\n`);
          else {
            io.out(`model ${model} on ${o.backend}: prompt ${P}, generate ${G}, median of ${runs}\n`);
            io.out(`  prefill ${report.prefillTokS.toFixed(2)} tok/s (${report.prefillTokPerCpuS.toFixed(2)} per CPU-second)\n`);
            io.out(`  decode  ${report.decodeTokS.toFixed(2)} tok/s (${report.decodeMsPerToken.toFixed(1)} ms/token; ${report.decodeTokPerCpuS.toFixed(2)} per CPU-second)\n`);
            io.out(`  load average ${report.loadAverage.toFixed(2)}, staging ${report.stageMs.toFixed(0)} ms, device bytes ${report.deviceBytes.total} (weights ${report.deviceBytes.weights}, state ${report.deviceBytes.state})\n`);
          }
        } catch (err) {
          if (err instanceof ModelError) throw new CliError(err.code === "io" ? "file-unreadable" : "bad-input", err.message, { command: "bench", file: err.file ?? model });
          if (err instanceof RuntimeError) throw new CliError("bad-input", err.message, { command: "bench", file: model });
          throw err;
        } finally {
          engine?.close();
          executor.dispose();
        }
      });
  },
};
