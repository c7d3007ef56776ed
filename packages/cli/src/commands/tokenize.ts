// `poot tokenize MODEL --text "…" [--add-special]`: the model's tokenizer (tokenizer.json or GGUF vocab) on
// a string; prints the ids as a JSON array (added tokens in the text match; BOS/EOS only with --add-special).
import { loadTokenizer } from "@poot/models";
import type { CommandModule } from "./index.js";
import { withModelErrors } from "./model-args.js";

/** The `tokenize` subcommand. */
export const tokenize: CommandModule = {
  name: "tokenize",
  register: (program, io) => {
    program
      .command("tokenize")
      .description("tokenize text with the model's tokenizer; prints the ids as JSON")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .requiredOption("--text <text>", "the text to tokenize")
      .option("--add-special", "add BOS/EOS as the tokenizer's post-processor says")
      .action((model: string, options: { text: string; addSpecial?: boolean }) => {
        const ids = withModelErrors("tokenize", model, () =>
          loadTokenizer(model).encode(options.text, { addSpecial: options.addSpecial === true }),
        );
        io.out(`${JSON.stringify(ids)}\n`);
      });
  },
};
