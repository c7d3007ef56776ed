// `poot trace MODEL --kind prefill|decode|batched-decode`: traces a model into its primitive graph and prints
// it (graph-ir printer), or writes graph-ir JSON with --out for `poot ir` and the compiler.
import { writeFileSync } from "node:fs";
import { dispatchCount, graphToJsonString, printGraph } from "@poot/graph-ir";
import type { GraphKind } from "@poot/models";
import { CliError } from "../errors.js";
import type { CommandModule } from "./index.js";
import { openForForward, withModelErrors } from "./model-args.js";

function positive(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new CliError("bad-input", `${flag} must be a positive integer, got "${text}"`, { command: "trace" });
  return n;
}

/** The `trace` subcommand. */
export const trace: CommandModule = {
  name: "trace",
  register: (program, io) => {
    program
      .command("trace")
      .description("trace a model into its primitive graph; print it, or write graph-ir JSON with --out")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .option("--kind <kind>", "prefill | decode | batched-decode", "decode")
      .option("--tokens <n>", "tokens per step (prefill, decode)", "1")
      .option("--batch <n>", "sequences (batched-decode)", "1")
      .option("--context <n>", "KV cache capacity in tokens (decode, batched-decode)", "2048")
      .option("--out <file>", "write graph-ir JSON instead of printing")
      .option("--weights <kind>", "HF folders: f32 or bf16", "f32")
      .action(
        (
          model: string,
          o: { kind: string; tokens: string; batch: string; context: string; out?: string; weights: string },
        ) => {
          let kind: GraphKind;
          if (o.kind === "prefill") kind = { kind: "prefill", tokens: positive(o.tokens, "--tokens") };
          else if (o.kind === "decode")
            kind = {
              kind: "decode",
              context: positive(o.context, "--context"),
              tokens: positive(o.tokens, "--tokens"),
            };
          else if (o.kind === "batched-decode")
            kind = {
              kind: "batched-decode",
              batch: positive(o.batch, "--batch"),
              context: positive(o.context, "--context"),
            };
          else
            throw new CliError("bad-input", `--kind must be prefill, decode or batched-decode, got "${o.kind}"`, {
              command: "trace",
            });
          const m = openForForward("trace", model, { backend: "eval", weights: o.weights });
          try {
            const g = withModelErrors("trace", model, () => m.graph(kind));
            if (o.out === undefined) {
              io.out(printGraph(g));
              return;
            }
            try {
              writeFileSync(o.out, graphToJsonString(g));
            } catch (err) {
              throw new CliError("file-unreadable", `cannot write ${o.out}: ${(err as Error).message}`, {
                command: "trace",
                file: o.out,
              });
            }
            io.out(
              `${o.kind}: ${g.eqns.length} equations, ${dispatchCount(g)} dispatches, ${g.states.length} states -> ${o.out}\n`,
            );
          } finally {
            m.close();
          }
        },
      );
  },
};
