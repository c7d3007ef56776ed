// What the user typed for MODEL and the prompt, made concrete: `demo` and `org/name` resolved to folders, and
// the prompt read from stdin when -p is absent (`echo hi | poot run`), as llama.cpp and ollama users expect.
import { CliError } from "../errors.js";
import { hubCacheDir, resolveModelName } from "../hub/cache.js";
import { findDemoModel } from "./backends.js";

/** MODEL as typed: `demo` is the bundled demo model; `org/name` is looked up in the Hugging Face cache. */
export function resolveModelArg(arg: string, command: string): string {
  if (arg === "demo") {
    const demo = findDemoModel();
    if (demo === null)
      throw new CliError("file-unreadable", "the demo model (@poot/demo-model) is not installed next to the CLI", {
        command,
      });
    return demo;
  }
  return resolveModelName(arg, hubCacheDir(), command);
}

/** The prompt from stdin (one trailing newline dropped); a CliError when stdin is a terminal or empty. */
export async function readStdinPrompt(): Promise<string> {
  if (process.stdin.isTTY === true)
    throw new CliError("bad-input", "no prompt: pass -p TEXT (--prompt), or pipe the prompt on stdin", {
      command: "run",
    });
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
  if (text === "")
    throw new CliError("bad-input", "no prompt: stdin was empty; pass -p TEXT (--prompt) or pipe a prompt", {
      command: "run",
    });
  return text;
}
