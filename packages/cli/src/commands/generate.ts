// `poot generate MODEL --ids … --max-tokens N --greedy [--compiled --target T]`: greedy decoding token by token
// through the decode graph's KV cache; prints the generated ids as a JSON array on stdout.
import { BACKEND_KINDS, PlanError, compile, defaultTarget, type BackendKind } from "@poot/graph-plan";
import { CliError } from "../errors.js";
import { createExecutor } from "./backends.js";
import { executorGreedy, type CompileGraph } from "./executor-forward.js";
import type { CommandModule } from "./index.js";
import { openForForward, parseIds, withModelErrors, type ForwardOptions } from "./model-args.js";

/** The `generate` subcommand. */
export const generate: CommandModule = {
  name: "generate",
  register: (program, io) => {
    program
      .command("generate")
      .description("generate tokens after a prompt with the KV cache; prints the new ids as JSON")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .requiredOption("--ids <ids>", "comma-separated prompt token ids")
      .option("--max-tokens <n>", "tokens to generate", "16")
      .option("--greedy", "greedy decoding (argmax); the only sampler so far")
      .option("--ignore-eos", "keep generating past an end-of-sequence token")
      .option("--backend <name>", "where to run", "eval")
      .option("--weights <kind>", "HF folders: f32 (model.safetensors) or bf16 (model.bf16.safetensors)", "f32")
      .option("--compiled", "run the compiled (optimized) programs instead of the primitive graphs")
      .option("--target <kind>", `with --compiled: the target compiled for (${BACKEND_KINDS.join(" | ")})`, "cpu")
      .action((model: string, options: GenerateOptions) => {
        const ids = parseIds(options.ids, "generate");
        const n = Number(options.maxTokens);
        if (!Number.isSafeInteger(n) || n < 1) throw new CliError("bad-input", `--max-tokens must be a positive integer, got "${options.maxTokens}"`, { command: "generate" });
        if (options.greedy !== true) throw new CliError("bad-input", "only greedy decoding is available: pass --greedy", { command: "generate" });
        const compileGraph = options.compiled === true ? compiler(options.target, model) : undefined;
        const m = openForForward("generate", model, options);
        // The eval backend runs the model's own forward, unless compiled programs are asked for: those are
        // staged on an executor (eval's evaluates each composite op by its reference semantics).
        const executor = options.backend === "eval" && compileGraph === undefined ? null : createExecutor(options.backend, "generate");
        try {
          const stop = options.ignoreEos === true ? [] : m.config.eosTokenIds;
          const gen = withModelErrors("generate", model, () => (executor === null ? m.generate(ids, n, stop).ids : executorGreedy(m, executor, ids, n, stop, compileGraph)));
          io.out(`${JSON.stringify(gen)}\n`);
        } finally {
          if (executor === null) m.close();
          else executor.dispose();
        }
      });
  },
};

type GenerateOptions = ForwardOptions & { ids: string; maxTokens: string; greedy?: boolean; ignoreEos?: boolean; compiled?: boolean; target: string };

/** graph-plan's compile for `--target`, with planner refusals as one-line CLI errors naming the model. */
function compiler(target: string, model: string): CompileGraph {
  if (!(BACKEND_KINDS as readonly string[]).includes(target)) throw new CliError("bad-input", `--target must be one of ${BACKEND_KINDS.join(", ")}, got "${target}"`, { command: "generate" });
  return (g, mode) => {
    try {
      return compile(g, defaultTarget(target as BackendKind), { mode });
    } catch (err) {
      if (err instanceof PlanError) throw new CliError("command-failed", err.message, { command: "generate", file: model });
      throw err;
    }
  };
}
