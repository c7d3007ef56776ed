// `poot chat [MODEL]`: an interactive multi-turn chat with the model's chat template. Each line typed is a user
// turn; the answer streams back; `/exit` (or end of input) leaves; Ctrl-C stops the current answer (keeping what
// was said) and, at the prompt, leaves. Every turn re-runs the whole conversation in a fresh session.
import * as readline from "node:readline";
import { Engine, generate, type GenerateOptions } from "@poot/runtime";
import { LoadedModel, loadTokenizer } from "@poot/models";
import { CliError } from "../errors.js";
import { BACKEND_NAMES, createExecutor, findDemoModel } from "./backends.js";
import type { CommandModule } from "./index.js";
import { generateOptions, parseContext, samplingOptions } from "./run.js";

interface ChatOptions {
  backend: string;
  autoBackend?: boolean;
  maxTokens: string;
  temperature: string;
  topP: string;
  topK: string;
  minP: string;
  repeatPenalty: string;
  seed?: string;
  context?: string;
  system?: string;
  weights: string;
}

/** Checks `poot chat`'s flag values, before `--backend auto` probes the backends (and again in the action). */
function checkChatFlags(o: ChatOptions): GenerateOptions {
  if (o.weights !== "f32" && o.weights !== "bf16")
    throw new CliError("bad-input", `--weights must be f32 or bf16, got "${o.weights}"`, { command: "chat" });
  if (o.context !== undefined) parseContext(o.context, "chat");
  return generateOptions({ ...o, prompt: "", target: "cpu" }, "chat");
}

/** The `chat` subcommand. */
export const chat: CommandModule = {
  name: "chat",
  checkFlags: (options) => void checkChatFlags(options as unknown as ChatOptions),
  register: (program, io) => {
    samplingOptions(
      program
        .command("chat")
        .description("chat with a model in the terminal (its chat template; /exit leaves; Ctrl-C stops an answer)")
        .argument("[model]", "a model folder, .gguf file, org/name from the HF cache, or demo (the default)")
        .option("--backend <name>", `where to run: ${BACKEND_NAMES.join(" | ")}`, "auto")
        .option("-n, --max-tokens <n>", "most tokens per answer", "256"),
    )
      .option("-c, --context <n>", "KV capacity of the conversation in tokens (default: the model's, at most 2048)")
      .option("--system <text>", "a system message opening the conversation")
      .option("--weights <kind>", "HF folders: f32 or bf16", "f32")
      .action(async (modelArg: string | undefined, o: ChatOptions) => {
        const model = modelArg ?? findDemoModel();
        if (model === null)
          throw new CliError("file-unreadable", "no MODEL given and the demo model is not installed", {
            command: "chat",
          });
        const gen = checkChatFlags(o);
        const executor = createExecutor(o.backend, "chat");
        const m = LoadedModel.open(model, { weights: o.weights as "f32" | "bf16" }); // checked by checkChatFlags
        const tok = loadTokenizer(model);
        const context =
          o.context === undefined ? Math.min(m.config.maxPositions, 2048) : parseContext(o.context, "chat");
        const engine = new Engine(m, { executor, context, tokenizer: tok, maxSequences: 1 });
        const messages: { role: string; content: string }[] =
          o.system === undefined ? [] : [{ role: "system", content: o.system }];
        const rl = readline.createInterface({
          input: process.stdin,
          output: process.stderr,
          terminal: process.stdin.isTTY === true,
        });
        let answering = false;
        let stop = false;
        let closed = false;
        // Ctrl-C: readline reports it on a terminal; a piped stdin gets the process signal.
        const interrupt = (): void => {
          if (answering) stop = true;
          else rl.close();
        };
        rl.on("SIGINT", interrupt);
        process.on("SIGINT", interrupt);
        // Lines typed (or piped) while an answer streams wait in a queue for their turn.
        const queued: string[] = [];
        let wake: (() => void) | null = null;
        rl.on("line", (l) => {
          queued.push(l);
          wake?.();
        });
        rl.on("close", () => {
          closed = true;
          wake?.();
        });
        const nextLine = async (): Promise<string | null> => {
          while (queued.length === 0 && !closed) await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
          return queued.shift() ?? null;
        };
        io.err(
          `poot chat: ${model} on ${o.autoBackend === true ? "auto: " : ""}${o.backend} (context ${context}); /exit leaves, Ctrl-C stops an answer\n`,
        );
        try {
          for (;;) {
            if (process.stdin.isTTY === true) rl.setPrompt("> "), rl.prompt();
            const line = await nextLine();
            if (line === null || line.trim() === "/exit" || line.trim() === "/quit") break;
            if (line.trim() === "") continue;
            messages.push({ role: "user", content: line });
            const ids = tok.encode(tok.applyChatTemplate(messages), { addSpecial: false });
            if (ids.length >= context)
              throw new CliError(
                "bad-input",
                `the conversation has ${ids.length} tokens; the context holds ${context} (-c)`,
                { command: "chat" },
              );
            const session = engine.openSession();
            const it = generate(engine, session, ids, {
              ...gen,
              maxTokens: Math.min(gen.maxTokens, context - ids.length),
            });
            answering = true;
            stop = false;
            let answer = "";
            try {
              for (let r = it.next(); r.done !== true; r = it.next()) {
                io.out(r.value.text);
                answer += r.value.text;
                // Let Ctrl-C (readline's SIGINT) in between tokens.
                await new Promise<void>((resolve) => setImmediate(resolve));
                if (stop) break;
              }
            } finally {
              answering = false;
              session.release();
            }
            io.out("\n");
            messages.push({ role: "assistant", content: answer });
          }
        } finally {
          process.off("SIGINT", interrupt);
          rl.close();
          engine.close();
          executor.dispose();
        }
      });
  },
};
