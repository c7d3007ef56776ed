// Unit tests of the poot program: version, help, usage errors, the command table and CliError handling.
// The oracle for the version is package.json read here independently.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { EXIT_USAGE, createProgram, runCli } from "./cli.js";
import type { CommandModule } from "./commands/index.js";
import { bufferIo } from "./io.js";
import { CliError } from "./errors.js";

const pkgVersion = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;

/** A command defined here to exercise the table: echoes its argument, fails on "bad". */
const echo: CommandModule = {
  name: "echo",
  register: (program, io) => {
    program
      .command("echo")
      .description("print WORD")
      .argument("<word>", "what to print")
      .option("--upper", "upper-case it")
      .action((word: string, opts: { upper?: boolean }) => {
        if (word === "bad") throw new CliError("command-failed", `cannot echo "${word}"`, { command: "echo" });
        io.out(`${opts.upper ? word.toUpperCase() : word}\n`);
      });
  },
};

describe("runCli", () => {
  test("--version and -v print package.json's version", async () => {
    for (const flag of ["--version", "-v"]) {
      const io = bufferIo();
      expect(await runCli([flag], { io })).toBe(0);
      expect(io.stdout()).toBe(`${pkgVersion}\n`);
    }
  });

  test("--help shows usage, options and the registered commands", async () => {
    const io = bufferIo();
    expect(await runCli(["--help"], { io, commands: [echo] })).toBe(0);
    expect(io.stdout()).toMatch(/^Usage: poot \[options\] \[command\]/);
    expect(io.stdout()).toContain("--version");
    expect(io.stdout()).toMatch(/echo \[options\] <word>\s+print WORD/);
  });

  test("no arguments is a usage error that prints the help", async () => {
    const io = bufferIo();
    expect(await runCli([], { io })).toBe(EXIT_USAGE);
    expect(io.stderr()).toContain("Usage: poot");
  });

  test("an unknown command or option is a usage error naming it", async () => {
    const io = bufferIo();
    expect(await runCli(["frobnicate"], { io, commands: [echo] })).toBe(EXIT_USAGE);
    expect(io.stderr()).toContain("unknown command 'frobnicate'");
    const io2 = bufferIo();
    expect(await runCli(["--frob"], { io: io2 })).toBe(EXIT_USAGE);
    expect(io2.stderr()).toContain("unknown option '--frob'");
  });

  test("a table command runs with its arguments and options", async () => {
    const io = bufferIo();
    expect(await runCli(["echo", "--upper", "hello"], { io, commands: [echo] })).toBe(0);
    expect(io.stdout()).toBe("HELLO\n");
  });

  test("a missing command argument is a usage error", async () => {
    const io = bufferIo();
    expect(await runCli(["echo"], { io, commands: [echo] })).toBe(EXIT_USAGE);
    expect(io.stderr()).toContain("missing required argument 'word'");
  });

  test("a CliError from a command prints `poot: message` and exits 1", async () => {
    const io = bufferIo();
    expect(await runCli(["echo", "bad"], { io, commands: [echo] })).toBe(1);
    expect(io.stderr()).toBe('poot: cannot echo "bad"\n');
  });

  test("an internal error is rethrown, not turned into an exit code", async () => {
    const boom: CommandModule = {
      name: "boom",
      register: (program) =>
        void program.command("boom").action(() => {
          throw new TypeError("bug");
        }),
    };
    await expect(runCli(["boom"], { io: bufferIo(), commands: [boom] })).rejects.toThrow(TypeError);
  });
});

describe("createProgram", () => {
  test("two commands with one name are a duplicate-command CliError", () => {
    let caught: unknown;
    try {
      createProgram({ io: bufferIo(), commands: [echo, echo] });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CliError);
    expect((caught as CliError).code).toBe("duplicate-command");
    expect((caught as CliError).context.command).toBe("echo");
  });
});

describe("unknown commands", () => {
  test("are a usage error with the built-in table and with an empty one", async () => {
    for (const commands of [undefined, []]) {
      const io = bufferIo();
      expect(await runCli(["frobnicate"], { io, ...(commands ? { commands } : {}) })).toBe(EXIT_USAGE);
      expect(io.stderr()).toContain("unknown command 'frobnicate'");
    }
  });
});
