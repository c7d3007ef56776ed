// Where the CLI writes: the process streams, or buffers that tests (and embedders) read back.
// Commands receive a CliIo and never touch process.stdout directly.
import type { CliIo } from "./commands/index.js";

/** Writes to process.stdout and process.stderr. */
export const processIo: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/** A CliIo that records everything written; `stdout()` / `stderr()` return it so far. */
export function bufferIo(): CliIo & { readonly stdout: () => string; readonly stderr: () => string } {
  let out = "";
  let err = "";
  return {
    out: (text) => void (out += text),
    err: (text) => void (err += text),
    stdout: () => out,
    stderr: () => err,
  };
}
