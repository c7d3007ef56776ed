// `poot generate MODEL --ids … --max-tokens N --greedy [--compiled --target T]`: greedy decoding token by token
// through the decode graph's KV cache; prints the generated ids as a JSON array on stdout.
import { BACKEND_KINDS, defaultTarget } from "@poot/graph-plan";
import { CliError } from "../errors.js";
import {
  activationsOption,
  numericsOption,
  parseNumerics,
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
import {
  checkForwardFlags,
  checkTarget,
  compileForCommand,
  openForForward,
  withModelErrors,
  type CompiledForwardOptions,
} from "./model-args.js";

/**
 * Checks `poot generate`'s flag values (--ids, --max-tokens, --greedy, --tp with --compiled, --weights,
 * --activations, --numerics, --target) without side effects: the CLI calls it before `--backend auto` probes the
 * backends, and the action again. Returns the prompt ids and the number of tokens to generate.
 */
function checkGenerateFlags(o: GenerateOptions & PlacementFlags): { readonly ids: number[]; readonly n: number } {
  const command = "generate";
  const ids = checkForwardFlags(command, o);
  const n = Number(o.maxTokens);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new CliError("bad-input", `--max-tokens must be a positive integer, got "${o.maxTokens}"`, { command });
  if (o.greedy !== true)
    throw new CliError("bad-input", "only greedy decoding is available: pass --greedy", { command });
  refuseCompiledTp(o, command);
  parseNumerics(o.numerics, command);
  return { ids, n };
}

/** The `generate` subcommand. */
export const generate: CommandModule = {
  name: "generate",
  checkFlags: (options) => void checkGenerateFlags(options as unknown as GenerateOptions & PlacementFlags),
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
        const { ids, n } = checkGenerateFlags(options);
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

type GenerateOptions = CompiledForwardOptions & {
  maxTokens: string;
  greedy?: boolean;
  ignoreEos?: boolean;
  numerics?: string;
};

/** graph-plan's compile for `--target`, with planner refusals as one-line CLI errors naming the model. */
function compiler(target: string, model: string): CompileGraph {
  const kind = checkTarget(target, "generate");
  return (g, mode) => compileForCommand(g, defaultTarget(kind), mode, "generate", model);
}
