// `poot logits MODEL --ids 1,2,3 [--out FILE]`: the prompt's logits from one prefill, written as float32
// little-endian [T, V] to FILE, with a one-line summary on stdout.
import { writeFileSync } from "node:fs";
import { evaluate } from "@poot/graph-ir";
import { BACKEND_KINDS, PLAN_OPS, defaultTarget } from "@poot/graph-plan";
import { argmax, checkpointConsts, openCheckpoint, type LoadedModel } from "@poot/models";
import { activationsOption } from "@poot/serve";
import { CliError } from "../errors.js";
import { createExecutor } from "./backends.js";
import { executorLogits } from "./executor-forward.js";
import type { CommandModule } from "./index.js";
import {
  checkForwardFlags,
  checkTarget,
  compileForCommand,
  openForForward,
  withModelErrors,
  type CompiledForwardOptions,
  type ForwardOptions,
} from "./model-args.js";

/** `poot logits` options as commander parses them. */
type LogitsOptions = CompiledForwardOptions & { out?: string };

/** The `logits` subcommand. */
export const logits: CommandModule = {
  name: "logits",
  // Checks --ids, --weights, --activations and --target with --compiled, before `--backend auto` probes the backends.
  checkFlags: (options) => void checkForwardFlags("logits", options as unknown as LogitsOptions),
  register: (program, io) => {
    program
      .command("logits")
      .description("compute the logits of a prompt; write float32 [T, V] little-endian to --out")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .requiredOption("--ids <ids>", "comma-separated prompt token ids")
      .option("--out <file>", "write the logits as float32 little-endian [T, V]")
      .option("--backend <name>", "where to run", "eval")
      .option("--weights <kind>", "HF folders: f32 (model.safetensors) or bf16 (model.bf16.safetensors)", "f32")
      .addOption(activationsOption())
      .option("--compiled", "evaluate the compiled (optimized) graph instead of the primitive one")
      .option("--target <kind>", `with --compiled: the target compiled for (${BACKEND_KINDS.join(" | ")})`, "cpu")
      .action((model: string, options: LogitsOptions) => {
        const ids = checkForwardFlags("logits", options);
        const m = openForForward("logits", model, options);
        // Executor backends own the model through their engine; eval runs the model's own forward.
        const executor =
          options.backend === "eval" || options.compiled === true ? null : createExecutor(options.backend, "logits");
        try {
          const out = withModelErrors("logits", model, () =>
            options.compiled === true
              ? compiledLogits(m, model, ids, options)
              : executor === null
                ? m.logits(ids)
                : executorLogits(m, executor, ids),
          );
          const V = m.config.vocabSize,
            T = ids.length;
          if (options.out !== undefined) {
            try {
              writeFileSync(options.out, new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
            } catch (err) {
              throw new CliError("file-unreadable", `cannot write ${options.out}: ${(err as Error).message}`, {
                command: "logits",
                file: options.out,
              });
            }
          }
          let maxAbs = 0;
          for (const x of out) maxAbs = Math.max(maxAbs, Math.abs(x));
          const last = argmax(out.subarray((T - 1) * V));
          io.out(
            `logits f32[${T},${V}] max|x|=${maxAbs.toPrecision(6)} last-argmax=${last}${options.out === undefined ? "" : ` -> ${options.out}`}\n`,
          );
        } finally {
          if (executor === null) m.close();
          else executor.dispose();
        }
      });
  },
};

/** Prompt logits from the optimized graph of `--target`, evaluated with the composite ops' reference semantics. */
function compiledLogits(
  m: LoadedModel,
  model: string,
  ids: readonly number[],
  options: ForwardOptions & { target: string },
): Float32Array {
  const target = checkTarget(options.target, "logits");
  for (const id of ids)
    if (id >= m.config.vocabSize)
      throw new CliError("bad-input", `token id ${id} is outside the vocabulary [0, ${m.config.vocabSize})`, {
        command: "logits",
      });
  const g = m.graph({ kind: "prefill", tokens: ids.length });
  const graph = compileForCommand(g, defaultTarget(target), "prefill", "logits", model).graph;
  const ckpt = openCheckpoint(model, options.weights === "bf16" ? { fileName: "model.bf16.safetensors" } : {});
  try {
    const r = evaluate(
      graph,
      { consts: checkpointConsts(ckpt), slots: { ids: Int32Array.from(ids) } },
      { ops: PLAN_OPS },
    );
    return Float32Array.from(r.outputs.logits!.data as Float64Array);
  } finally {
    ckpt.close();
  }
}
