// `poot generate MODEL --ids … --max-tokens N --greedy [--compiled --target T]`: greedy decoding token by token
// through the decode graph's KV cache; prints the generated ids as a JSON array on stdout.
import { BACKEND_KINDS, PlanError, compile, defaultTarget, type BackendKind } from "@poot/graph-plan";
import { CliError } from "../errors.js";
import {
  activationsOption,
  numericsOption,
  engineDevices,
  placementOptions,
  planDevices,
  type PlacedDevices,
  type PlacementFlags,
} from "@poot/serve";
import { BACKEND_NAMES, createExecutor, setNumerics } from "./backends.js";
import { executorGreedy, type CompileGraph } from "./executor-forward.js";
import { refuseCompiledTp } from "./compile-tp.js";
import type { CommandModule } from "./index.js";
import { openForForward, parseIds, withModelErrors, type ForwardOptions } from "./model-args.js";

/** The `generate` subcommand. */
export const generate: CommandModule = {
  name: "generate",
  register: (program, io) => {
    placementOptions(program.command("generate"))
      .description("generate tokens after a prompt with the KV cache; prints the new ids as JSON")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .requiredOption("--ids <ids>", "comma-separated prompt token ids")
      .option("--max-tokens <n>", "tokens to generate", "16")
      .option("--greedy", "greedy decoding (argmax); the only sampler so far")
      .option("--ignore-eos", "keep generating past an end-of-sequence token")
      .option("--backend <name>", "where to run", "eval")
      .option("--weights <kind>", "HF folders: f32 (model.safetensors) or bf16 (model.bf16.safetensors)", "f32")
      .addOption(activationsOption())
      .addOption(numericsOption())
      .option("--compiled", "run the compiled (optimized) programs instead of the primitive graphs")
      .option("--target <kind>", `with --compiled: the target compiled for (${BACKEND_KINDS.join(" | ")})`, "cpu")
      .action((model: string, options: GenerateOptions & PlacementFlags) => {
        const ids = parseIds(options.ids, "generate");
        const n = Number(options.maxTokens);
        if (!Number.isSafeInteger(n) || n < 1)
          throw new CliError("bad-input", `--max-tokens must be a positive integer, got "${options.maxTokens}"`, {
            command: "generate",
          });
        if (options.greedy !== true)
          throw new CliError("bad-input", "only greedy decoding is available: pass --greedy", { command: "generate" });
        refuseCompiledTp(options, "generate");
        setNumerics(options.numerics, "generate");
        const compileGraph = options.compiled === true ? compiler(options.target, model) : undefined;
        const make = (n: string, c: string) => createExecutor(n, c);
        const planned = planDevices(
          options,
          options.backend,
          model,
          options.weights === "bf16" ? "bf16" : "f32",
          "generate",
          BACKEND_NAMES,
          make,
        );
        const plan = planned.plan;
        // The eval backend runs the model's own forward, unless compiled programs, a placement or --tp are asked
        // for: those are staged on executors (eval's evaluates each composite op by its reference semantics).
        let placed: PlacedDevices | null = planned.placed;
        const tp = options.tp !== undefined && options.tp.trim() !== "1";
        if (options.backend === "eval" && compileGraph === undefined && plan === null && !tp) {
          planned.placed.dispose();
          placed = null;
        }
        let m: ReturnType<typeof openForForward>;
        try {
          m = openForForward("generate", model, options);
        } catch (err) {
          placed?.dispose();
          throw err;
        }
        try {
          const stop = options.ignoreEos === true ? [] : m.config.eosTokenIds;
          const gen = withModelErrors("generate", model, () =>
            placed === null
              ? m.generate(ids, n, stop).ids
              : executorGreedy(m, placed.executor, ids, n, stop, compileGraph, engineDevices(plan, placed, make)),
          );
          io.out(`${JSON.stringify(gen)}\n`);
        } finally {
          if (placed === null) m.close();
          else placed.dispose();
        }
      });
  },
};

type GenerateOptions = ForwardOptions & {
  ids: string;
  maxTokens: string;
  greedy?: boolean;
  ignoreEos?: boolean;
  numerics?: string;
  compiled?: boolean;
  target: string;
};

/** graph-plan's compile for `--target`, with planner refusals as one-line CLI errors naming the model. */
function compiler(target: string, model: string): CompileGraph {
  if (!(BACKEND_KINDS as readonly string[]).includes(target))
    throw new CliError("bad-input", `--target must be one of ${BACKEND_KINDS.join(", ")}, got "${target}"`, {
      command: "generate",
    });
  return (g, mode) => {
    try {
      return compile(g, defaultTarget(target as BackendKind), { mode });
    } catch (err) {
      if (err instanceof PlanError)
        throw new CliError("command-failed", err.message, { command: "generate", file: model });
      throw err;
    }
  };
}
