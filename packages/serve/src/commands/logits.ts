// `poot logits MODEL --ids 1,2,3 [--out FILE]`: the prompt's logits from one prefill, written as float32
// little-endian [T, V] to FILE, with a one-line summary on stdout.
import { writeFileSync } from "node:fs";
import { argmax } from "@poot/models";
import { CliError } from "../errors.js";
import type { CommandModule } from "./index.js";
import { openForForward, parseIds, withModelErrors, type ForwardOptions } from "./model-args.js";

/** The `logits` subcommand. */
export const logits: CommandModule = {
  name: "logits",
  register: (program, io) => {
    program
      .command("logits")
      .description("compute the logits of a prompt; write float32 [T, V] little-endian to --out")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .requiredOption("--ids <ids>", "comma-separated prompt token ids")
      .option("--out <file>", "write the logits as float32 little-endian [T, V]")
      .option("--backend <name>", "where to run", "eval")
      .option("--weights <kind>", "HF folders: f32 (model.safetensors) or bf16 (model.bf16.safetensors)", "f32")
      .action((model: string, options: ForwardOptions & { ids: string; out?: string }) => {
        const ids = parseIds(options.ids, "logits");
        const m = openForForward("logits", model, options);
        try {
          const out = withModelErrors("logits", model, () => m.logits(ids));
          const V = m.config.vocabSize, T = ids.length;
          if (options.out !== undefined) {
            try {
              writeFileSync(options.out, new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
            } catch (err) {
              throw new CliError("file-unreadable", `cannot write ${options.out}: ${(err as Error).message}`, { command: "logits", file: options.out });
            }
          }
          let maxAbs = 0;
          for (const x of out) maxAbs = Math.max(maxAbs, Math.abs(x));
          const last = argmax(out.subarray((T - 1) * V));
          io.out(`logits f32[${T},${V}] max|x|=${maxAbs.toPrecision(6)} last-argmax=${last}${options.out === undefined ? "" : ` -> ${options.out}`}\n`);
        } finally {
          m.close();
        }
      });
  },
};
