// `--numerics` (and, without it, POOT_CPU_NUMERICS) is checked by one function, @poot/serve's parseNumerics: every
// command that takes it says the same one line for a bad value, before any model is opened.
// Planted: serve used to leave a bad POOT_CPU_NUMERICS unchecked (its engine worker then ran exact numerics), so the
// request below went on to open the model and failed on the missing file instead.
import { bufferIo, runCli } from "@poot/cli";
import { afterEach, describe, expect, test } from "vitest";

const COMMANDS: readonly (readonly string[])[] = [
  ["run", "/nonexistent/model", "--prompt", "hi", "--backend", "cpu"],
  ["generate", "/nonexistent/model", "--ids", "1", "--greedy", "--backend", "cpu"],
  ["bench", "/nonexistent/model", "--backend", "cpu"],
  ["serve", "/nonexistent/model", "--backend", "cpu", "--port", "0"],
];

/** Runs `poot args` in-process; its exit code and stderr. */
async function poot(args: readonly string[]): Promise<{ code: number; stderr: string }> {
  const io = bufferIo();
  const code = await runCli(args, { io });
  return { code, stderr: io.stderr() };
}

describe("--numerics is checked alike everywhere", () => {
  const saved = process.env["POOT_CPU_NUMERICS"];
  afterEach(() => {
    if (saved === undefined) delete process.env["POOT_CPU_NUMERICS"];
    else process.env["POOT_CPU_NUMERICS"] = saved;
  });

  test.each(COMMANDS.map((c) => [c[0]!, c]))("%s --numerics fastest", async (_name, args) => {
    delete process.env["POOT_CPU_NUMERICS"];
    const r = await poot([...args, "--numerics", "fastest"]);
    expect(r).toEqual({ code: 1, stderr: 'poot: --numerics must be exact or fast, got "fastest"\n' });
  });

  test.each(COMMANDS.map((c) => [c[0]!, c]))("%s with POOT_CPU_NUMERICS=fastest", async (_name, args) => {
    process.env["POOT_CPU_NUMERICS"] = "fastest";
    const r = await poot(args);
    expect(r).toEqual({ code: 1, stderr: 'poot: POOT_CPU_NUMERICS must be exact or fast, got "fastest"\n' });
  });

  test("the flag wins over the environment", async () => {
    process.env["POOT_CPU_NUMERICS"] = "fastest";
    const r = await poot([...COMMANDS[0]!, "--numerics", "exact"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("poot: no such file or folder (file /nonexistent/model)\n");
  });
});
