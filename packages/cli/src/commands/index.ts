// The table of `poot` subcommands: each lives in its own module in this folder and is listed here.
// Later work adds more commands as their packages land.
import * as fs from "node:fs";
import { serveCommand, type CliIo, type CommandModule } from "@poot/serve";
import type { Command } from "commander";
import { backendsCommand } from "./backends-command.js";
import { bench } from "./bench.js";
import { chat } from "./chat.js";
import { chatTemplate } from "./chat-template.js";
import { compileCommand } from "./compile.js";
import { generate } from "./generate.js";
import { ir } from "./ir.js";
import { kernelsCommand } from "./kernels.js";
import { list } from "./list.js";
import { logits } from "./logits.js";
import { pull } from "./pull.js";
import { BACKEND_NAMES, createExecutor, findDemoModel, loweringCache } from "./backends.js";
import { run } from "./run.js";
import { tokenize } from "./tokenize.js";
import { trace } from "./trace.js";

/** dist/serve-executors.js: beside the bundle once built; from the sources (tests), the package's built copy. */
function serveExecutorsModule(): URL {
  const beside = new URL("./serve-executors.js", import.meta.url);
  return fs.existsSync(beside) ? beside : new URL("../../dist/serve-executors.js", import.meta.url);
}

// A subcommand's shape is @poot/serve's (its `serve` command is one of the table's).
export type { CliIo, CommandModule };

/**
 * The built-in subcommands, in the order `poot --help` lists them. Add a command by writing
 * `src/commands/<name>.ts` that exports a {@link CommandModule} and listing it here.
 */
export const commands: readonly CommandModule[] = [
  run,
  chat,
  serveCommand(
    (name, command) =>
      createExecutor(
        name,
        command,
        {},
        loweringCache((m) =>
          process.stderr.write(`${m}
`),
        ),
      ),
    BACKEND_NAMES,
    // The engine worker thread makes its executors through this module (the built file next to the bundle).
    { url: serveExecutorsModule() },
    // No MODEL: the bundled demo model, as `poot run` and `poot chat` serve it.
    () => findDemoModel(),
  ),
  bench,
  ir,
  logits,
  generate,
  tokenize,
  chatTemplate,
  trace,
  compileCommand,
  kernelsCommand,
  backendsCommand,
  pull,
  list,
];
