// The `poot` program: a commander Command with the version, help and the subcommand table.
// runCli parses argv, runs the chosen command and turns errors into exit codes; bin/poot.mjs calls it.
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { type CliIo, type CommandModule, commands as builtinCommands } from "./commands/index.js";
import { CliError, invariant } from "./errors.js";
import { BACKEND_ROLES, resolveAuto } from "./commands/backend-probe.js";
import { backendFailure, loadBackend } from "./commands/backends.js";
import { resolveModelArg } from "./commands/prompt-input.js";
import { processIo } from "./io.js";

/** Options of {@link createProgram} and {@link runCli}. */
export interface CliOptions {
  /** Subcommands to register; defaults to the built-in table. */
  readonly commands?: readonly CommandModule[];
  /** Where output goes; defaults to process.stdout / process.stderr. */
  readonly io?: CliIo;
}

/** Exit code for usage errors (unknown command or option, missing argument), as most CLIs use. */
export const EXIT_USAGE = 2;

/** The version of @poot/cli, read from its package.json (one level above both src/ and dist/). */
export function cliVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  const version = (pkg as { version?: unknown }).version;
  invariant(typeof version === "string", "@poot/cli package.json has no version");
  return version;
}

/**
 * Builds the `poot` program. It throws instead of exiting (commander's exitOverride), so
 * {@link runCli} decides the exit code and tests can run it in-process.
 * @throws CliError with code "duplicate-command" when two modules share a name.
 */
export function createProgram(options: CliOptions = {}): Command {
  const io = options.io ?? processIo;
  const program = new Command("poot")
    .description("poot: an LLM compiler and runtime for Node.js")
    .version(cliVersion(), "-v, --version", "print the poot version")
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride()
    .showHelpAfterError("(run `poot --help` for the list of commands)")
    .addHelpText(
      "after",
      `\nBackends (--backend NAME; \`poot backends\` says which work here):\n${Object.entries(BACKEND_ROLES)
        .map(([n, r]) => `  ${n.padEnd(15)} ${r}`)
        .join("\n")}\n`,
    );
  const seen = new Set<string>();
  for (const command of options.commands ?? builtinCommands) {
    if (seen.has(command.name)) {
      throw new CliError("duplicate-command", `two commands are named "${command.name}"`, { command: command.name });
    }
    seen.add(command.name);
    command.register(program, io);
  }
  if (program.commands.length === 0) {
    // commander rejects unknown commands only once some exist; with an empty table, reject them here.
    program.on("command:*", (operands: string[]) => {
      program.error(`error: unknown command '${operands[0]}'`, { code: "commander.unknownCommand" });
    });
  }
  return program;
}

/**
 * Runs `poot` with `argv` (the arguments after the program name) and returns the exit code:
 * 0 on success (and for --help / --version), 1 when a command fails with a CliError, 2 on a usage error.
 * Errors that are not the user's (internal bugs) are rethrown.
 */
export async function runCli(argv: readonly string[], options: CliOptions = {}): Promise<number> {
  const io = options.io ?? processIo;
  const program = createProgram(options);
  const modules = options.commands ?? builtinCommands;
  // Before a command that takes --backend runs: resolve `auto` and import the chosen GPU backend's package.
  let backend = null as { readonly name: string; readonly command: string } | null;
  program.hook("preAction", async (_program, action) => {
    // MODEL by name: `demo`, or `org/name` from the Hugging Face cache (paths stay as given).
    if (action.registeredArguments[0]?.name() === "model" && typeof action.processedArgs[0] === "string") {
      action.processedArgs[0] = resolveModelArg(action.processedArgs[0], action.name());
    }
    const opts = action.opts();
    if (typeof opts["backend"] !== "string") return;
    // Bad flag values fail now, not after the probe below (about a second of GPU driver start-up).
    modules.find((m) => m.name === action.name())?.checkFlags?.(opts);
    if (opts["backend"] === "auto") {
      action.setOptionValue("backend", (await resolveAuto()).backend);
      action.setOptionValue("autoBackend", true);
    }
    const name = action.opts()["backend"] as string;
    backend = { name, command: action.name() };
    await loadBackend(name, action.name());
    // The GPU devices a --place names are imported too (their executors are made after the placement check).
    if (typeof opts["place"] === "string")
      for (const m of opts["place"].matchAll(/:([A-Za-z0-9_-]+)/g)) await loadBackend(m[1]!, action.name());
  });
  if (argv.length === 0) {
    // No command is a usage error: say what there is to type.
    io.err(program.helpInformation());
    return EXIT_USAGE;
  }
  try {
    // llama.cpp's -ngl (commander's short flags are one letter): the same as --gpu-layers.
    await program.parseAsync(
      argv.map((a) => (a === "-ngl" ? "--gpu-layers" : a)),
      { from: "user" },
    );
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has already printed help, the version or the usage message.
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    // A backend's failure (no driver, device lost, out of memory) is one line naming it and what to do.
    const mapped = backendFailure(backend?.name ?? "", backend?.command ?? argv[0] ?? "", err);
    if (mapped instanceof CliError) {
      io.err(`poot: ${mapped.message}\n`);
      return 1;
    }
    throw mapped;
  }
}
