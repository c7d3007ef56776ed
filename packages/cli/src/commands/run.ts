// `poot run [MODEL] --prompt "…"`: generates text with the runtime, streaming it to stdout, and ends with
// a one-line speed summary on stderr. Progress bars for load and compile are drawn only on a terminal.
import { Engine, RuntimeError, checkSampling, generate, type GenerateOptions } from "@poot/runtime";
import type { Graph } from "@poot/graph-ir";
import { BACKEND_KINDS, PlanError, compile, defaultTarget, type BackendKind } from "@poot/graph-plan";
import { GGUFCheckpoint, LoadedModel, ModelError, loadTokenizer } from "@poot/models";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import {
  BACKEND_NAMES,
  createExecutor,
  executorSettings,
  findDemoModel,
  loweringCache,
  setNumerics,
} from "./backends.js";
import {
  activationsOption,
  numericsOption,
  describePlacement,
  engineDevices,
  parseActivations,
  parseNumerics,
  placementOptions,
  planDevices,
  type PlacementFlags,
} from "@poot/serve";
import { refuseCompiledTp } from "./compile-tp.js";
import { checkTarget } from "./model-args.js";
import type { CommandModule } from "./index.js";
import { progressBar } from "./progress.js";
import { phaseMarker } from "./timing.js";
import { parseNumber } from "./numbers.js";
import { readStdinPrompt, resolveModelArg } from "./prompt-input.js";

/** Options of `poot run` as commander parses them. */
export interface RunOptions extends PlacementFlags {
  prompt?: string;
  model?: string;
  threads?: string;
  numerics?: string;
  json?: boolean;
  chat?: boolean;
  backend: string;
  maxTokens: string;
  temperature: string;
  topP: string;
  topK: string;
  minP: string;
  repeatPenalty: string;
  seed?: string;
  stop?: string[];
  context?: string;
  weights: string;
  activations?: string;
  ignoreEos?: boolean;
  compiled?: boolean;
  target: string;
  /** Set when --backend auto chose `backend`. */
  autoBackend?: boolean;
}

/**
 * Adds the sampling flags `run` and `chat` share (--temperature, --top-p, --top-k, --min-p, --repeat-penalty, --seed);
 * {@link generateOptions} checks them.
 */
export function samplingOptions(cmd: Command): Command {
  return cmd
    .option("--temperature <t>", "0 = greedy", "0.8")
    .option("--top-p <p>", "nucleus sampling mass (1 = off)", "0.95")
    .option("--top-k <k>", "keep the k most likely tokens (0 = off)", "40")
    .option("--min-p <p>", "drop tokens below p x the top probability (0 = off)", "0")
    .option("--repeat-penalty <r>", "repetition penalty over the whole sequence (1 = off)", "1")
    .option("-s, --seed <s>", "random seed (default: random)");
}

/** The sampling and limit options of a run, checked. */
export function generateOptions(o: RunOptions, command: string): GenerateOptions {
  const num = (flag: string, v: string, kind: "int" | "float") => parseNumber(flag, v, kind, command);
  const maxTokens = num("--max-tokens", o.maxTokens, "int");
  if (maxTokens < 1)
    throw new CliError("bad-input", `--max-tokens must be a positive integer, got ${maxTokens}`, { command });
  const options: GenerateOptions = {
    maxTokens,
    temperature: num("--temperature", o.temperature, "float"),
    topP: num("--top-p", o.topP, "float"),
    topK: num("--top-k", o.topK, "int"),
    minP: num("--min-p", o.minP, "float"),
    repetitionPenalty: num("--repeat-penalty", o.repeatPenalty, "float"),
    ...(o.seed === undefined ? {} : { seed: num("--seed", o.seed, "int") }),
    ...(o.stop === undefined ? {} : { stop: o.stop }),
    ...(o.ignoreEos === true ? { ignoreEos: true } : {}),
  };
  try {
    checkSampling(options);
  } catch (err) {
    if (!(err instanceof RuntimeError)) throw err;
    // The runtime names its option (topP) after a "[bad-sampling] " code; the user typed the flag (--top-p).
    const param = err.context.param ?? "";
    const text = err.message.replace(/^\[[a-z-]+\] /, "");
    const flag = SAMPLING_FLAGS[param];
    throw new CliError("bad-input", flag === undefined ? text : `${flag}${text.slice(param.length)}`, { command });
  }
  return options;
}

/** The flag of each sampling option `checkSampling` may name. */
const SAMPLING_FLAGS: Readonly<Record<string, string>> = {
  temperature: "--temperature",
  topP: "--top-p",
  topK: "--top-k",
  minP: "--min-p",
  repetitionPenalty: "--repeat-penalty",
  seed: "--seed",
};

/** Parses `--context` (`-c`): at least 2 tokens (a prompt token and a generated one). */
export function parseContext(text: string, command: string): number {
  const n = parseNumber("--context", text, "int", command);
  if (n < 2) throw new CliError("bad-input", `--context must be an integer >= 2, got ${n}`, { command });
  return n;
}

/**
 * Checks `poot run`'s flag values (numbers, --threads, --numerics, --weights, --target, --context, --activations)
 * without side effects: the CLI calls it before `--backend auto` probes the backends, and the action again.
 */
export function checkRunFlags(o: RunOptions): { readonly gen: GenerateOptions; readonly threads?: number } {
  const command = "run";
  let threads: number | undefined;
  if (o.threads !== undefined) {
    threads = parseNumber("--threads", o.threads, "int", command);
    if (threads < 1) throw new CliError("bad-input", `--threads must be >= 1, got ${threads}`, { command });
  }
  parseNumerics(o.numerics, command);
  if (o.weights !== "f32" && o.weights !== "bf16")
    throw new CliError("bad-input", `--weights must be f32 or bf16, got "${o.weights}"`, { command });
  const gen = generateOptions(o, command);
  if (o.compiled === true) checkTarget(o.target, command);
  if (o.context !== undefined) parseContext(o.context, command);
  parseActivations(o.activations, command);
  return threads === undefined ? { gen } : { gen, threads };
}

/** Turns runtime and model errors into CliErrors naming the model. */
function userErrors<T>(model: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ModelError)
      throw new CliError(err.code === "io" ? "file-unreadable" : "bad-input", err.message, {
        command: "run",
        file: err.file ?? model,
      });
    if (err instanceof RuntimeError) throw new CliError("bad-input", err.message, { command: "run", file: model });
    if (err instanceof PlanError) throw new CliError("command-failed", err.message, { command: "run", file: model });
    throw err;
  }
}

/** The `run` subcommand. */
export const run: CommandModule = {
  name: "run",
  checkFlags: (options) => void checkRunFlags(options as unknown as RunOptions),
  register: (program, io) => {
    samplingOptions(
      placementOptions(program.command("run"))
        .description("generate text from a prompt, streaming it; ends with a speed summary on stderr")
        .argument("[model]", "a Hugging Face model folder or a .gguf file (default: the bundled demo model)")
        .option("-m, --model <model>", "the model, instead of the MODEL argument")
        .option("-p, --prompt <text>", "the prompt (default: read from stdin when it is not a terminal)")
        .option("--chat", "wrap the prompt as one user turn with the model's chat template")
        .option("--backend <name>", `where to run: ${BACKEND_NAMES.join(" | ")} (\`poot backends\` lists them)`, "auto")
        .option("-n, --max-tokens <n>", "most tokens to generate", "128"),
    )
      .option("--stop <text...>", "stop strings")
      .option("-c, --context <n>", "KV capacity in tokens (default: prompt + max tokens, at most the model's)")
      .option("--weights <kind>", "HF folders: f32 (model.safetensors) or bf16 (model.bf16.safetensors)", "f32")
      .addOption(activationsOption())
      .option("--ignore-eos", "keep generating past end-of-sequence tokens")
      .option("-t, --threads <n>", "CPU backend: worker threads (default: one per core)")
      .addOption(numericsOption())
      .option(
        "--json",
        "print one JSON object (text, token counts, finish reason, tok/s, backend) instead of streaming",
      )
      .option("--compiled", "run the compiled (optimized) programs instead of the primitive graphs")
      .option("--target <kind>", `with --compiled: the target compiled for (${BACKEND_KINDS.join(" | ")})`, "cpu")
      .action(async (modelArg: string | undefined, o: RunOptions) => {
        if (modelArg !== undefined && o.model !== undefined)
          throw new CliError("bad-input", `give the model once: MODEL (${modelArg}) or -m (${o.model})`, {
            command: "run",
          });
        const model = modelArg ?? (o.model === undefined ? null : resolveModelArg(o.model, "run")) ?? findDemoModel();
        const { gen, threads } = checkRunFlags(o);
        const promptText = o.prompt ?? (await readStdinPrompt());
        if (threads !== undefined) executorSettings.threads = threads;
        setNumerics(o.numerics, "run");
        if (model === null)
          throw new CliError(
            "file-unreadable",
            "no MODEL given and the bundled demo model (models/demo) was not found next to the installed package",
            { command: "run" },
          );
        refuseCompiledTp(o, "run");
        const mark = phaseMarker((l) => io.err(l));
        mark("node start + imports + flags");
        const target = o.target as BackendKind;
        const compileGraph =
          o.compiled === true
            ? (g: Graph, mode: "decode" | "prefill") => compile(g, defaultTarget(target), { mode })
            : undefined;
        const cache = loweringCache((m) => io.err(`${m}\n`));
        const make = (n: string, c: string) => createExecutor(n, c, {}, cache);
        const { plan, placed } = planDevices(
          o,
          o.backend,
          model,
          o.weights as "f32" | "bf16",
          "run",
          BACKEND_NAMES,
          make,
        );
        const executor = placed.executor;
        mark("executor (device context)");
        const load = progressBar("load   ", 3);
        const weights = o.weights as "f32" | "bf16"; // checked by checkRunFlags
        let m: LoadedModel | null = null;
        let engine: Engine | null = null;
        try {
          const activations = parseActivations(o.activations, "run");
          const opened = userErrors(model, () => LoadedModel.open(model, { weights, activations }));
          m = opened;
          mark("model open (header parse)");
          load?.update(1);
          // A GGUF's vocabulary comes from the header the model already parsed (not a second parse of the file).
          const ck = opened.checkpoint;
          const tok = userErrors(model, () => loadTokenizer(ck instanceof GGUFCheckpoint ? ck : model));
          load?.update(2);
          mark("tokenizer");
          const text =
            o.chat === true
              ? userErrors(model, () => tok.applyChatTemplate([{ role: "user", content: promptText }]))
              : promptText;
          // A chat template writes its own BOS; a plain prompt gets the tokenizer's post-processor specials.
          const ids = userErrors(model, () => tok.encode(text, { addSpecial: o.chat !== true }));
          if (ids.length === 0)
            throw new CliError("bad-input", `the prompt encodes to no tokens with the tokenizer of ${model}`, {
              command: "run",
              file: model,
            });
          // The context is sized to the request: the eval backend's attention cost grows with it.
          const context =
            o.context !== undefined
              ? parseContext(o.context, "run")
              : Math.min(opened.config.maxPositions, ids.length + gen.maxTokens);
          if (context > opened.config.maxPositions)
            io.err(
              `poot run: warning: --context ${context} is past the model's ${opened.config.maxPositions} positions (max_position_embeddings); text beyond them degrades\n`,
            );
          if (ids.length >= context)
            throw new CliError("bad-input", `the prompt has ${ids.length} tokens; the context holds ${context}`, {
              command: "run",
              file: model,
            });
          const e = userErrors(
            model,
            () =>
              new Engine(opened, {
                executor,
                context,
                tokenizer: tok,
                maxSequences: 1,
                ...engineDevices(plan, placed, make),
                ...(compileGraph === undefined ? {} : { compileGraph }),
              }),
          );
          engine = e;
          mark("engine (bind weights)");
          load?.update(3);
          load?.stop();
          // The prompt's chunk sizes; the single-token decode program is staged once the first token is out (an
          // answer of one token never needs it), before any decode step is timed.
          const sizes = new Set(e.chunks(ids.length));
          const compileBar = progressBar("compile", sizes.size);
          let staged = 0;
          for (const c of sizes) {
            userErrors(model, () => e.decodeProgram(c, "last"));
            compileBar?.update(++staged);
          }
          compileBar?.stop();
          mark("stage prompt programs (lower, code load)", true);
          const it = generate(e, e.openSession(), ids, gen);
          let r = userErrors(model, () => it.next());
          mark("first token (prefill, lazy weight read/upload)", true);
          let answer = "";
          let decodeStaged = gen.maxTokens <= 1;
          while (r.done !== true) {
            if (o.json === true) answer += r.value.text;
            else io.out(r.value.text);
            if (!decodeStaged) {
              decodeStaged = true;
              userErrors(model, () => e.decodeProgram(1));
            }
            r = userErrors(model, () => it.next());
          }
          const res = r.value;
          if (o.json !== true) io.out("\n");
          const generated = res.ids.length;
          const prefillTps = (res.promptTokens / res.prefillMs) * 1000;
          const decodeTps = res.decodeSteps > 0 ? (res.decodeSteps / res.decodeMs) * 1000 : 0;
          const backend = `${o.autoBackend === true ? "auto: " : ""}${o.backend}`;
          if (o.json === true) {
            io.out(
              `${JSON.stringify({ text: answer, promptTokens: res.promptTokens, generatedTokens: generated, finishReason: res.finishReason, prefillTokensPerSecond: prefillTps, decodeTokensPerSecond: decodeTps, backend: o.backend, auto: o.autoBackend === true })}\n`,
            );
            return;
          }
          const report = e.placementReport();
          if (report !== null)
            io.err(
              `${describePlacement({ ...report, ...(plan?.chosen === undefined ? {} : { chosen: plan.chosen }) }).join("\n")}\n`,
            );
          io.err(
            `prompt ${res.promptTokens} tokens, generated ${generated} tokens (${res.finishReason}), prefill ${prefillTps.toFixed(1)} tok/s, decode ${decodeTps.toFixed(1)} tok/s [${backend}]\n`,
          );
        } finally {
          load?.stop();
          if (engine !== null) engine.close();
          else m?.close();
          placed.dispose();
        }
      });
  },
};
