// `poot chat-template MODEL --messages FILE`: renders the model's chat template (tokenizer_config.json or
// GGUF tokenizer.chat_template) over a JSON array of {role, content} messages and prints the prompt exactly.
import { readFileSync } from "node:fs";
import { loadTokenizer, type ChatMessage } from "@poot/models";
import { CliError } from "../errors.js";
import type { CommandModule } from "./index.js";
import { withModelErrors } from "./model-args.js";

function readMessages(file: string): ChatMessage[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new CliError("file-unreadable", `cannot read ${file}: ${(err as Error).message}`, {
      command: "chat-template",
      file,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CliError("bad-input", `${file}: not JSON: ${(err as Error).message}`, { command: "chat-template", file });
  }
  const ok =
    Array.isArray(json) &&
    json.every(
      (m) =>
        typeof m === "object" &&
        m !== null &&
        typeof (m as ChatMessage).role === "string" &&
        typeof (m as ChatMessage).content === "string",
    );
  if (!ok)
    throw new CliError("bad-input", `${file}: expected a JSON array of {"role": string, "content": string}`, {
      command: "chat-template",
      file,
    });
  return json as ChatMessage[];
}

/** The `chat-template` subcommand. */
export const chatTemplate: CommandModule = {
  name: "chat-template",
  register: (program, io) => {
    program
      .command("chat-template")
      .description("render the model's chat template over a JSON list of messages")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
      .requiredOption("--messages <file>", "JSON array of {role, content}")
      .option("--no-generation-prompt", "do not append the assistant turn header")
      .action((model: string, options: { messages: string; generationPrompt: boolean }) => {
        const messages = readMessages(options.messages);
        const text = withModelErrors("chat-template", model, () =>
          loadTokenizer(model).applyChatTemplate(messages, { addGenerationPrompt: options.generationPrompt }),
        );
        // Printed exactly as rendered (no newline added), so it can be piped into a tokenizer.
        io.out(text);
      });
  },
};
