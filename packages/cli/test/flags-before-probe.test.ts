// With `--backend auto` (the default), a bad flag value fails at once, before the backends are probed (about a
// second of GPU driver start-up): each command's flag check runs in runCli's preAction hook ahead of resolveAuto.
// Planted: a request whose error only the load finds (a missing model) does probe, so the counter sees probes.
import { bufferIo, runCli } from "@poot/cli";
import { describe, expect, test } from "vitest";
import { autoProbes } from "../src/commands/backend-probe.js";

/** Runs `poot args` in-process; its exit code, stderr, and how many auto probes it made. */
async function poot(args: string[]): Promise<{ code: number; stderr: string; probes: number }> {
  const io = bufferIo();
  const before = autoProbes;
  const code = await runCli(args, { io });
  return { code, stderr: io.stderr(), probes: autoProbes - before };
}

describe("bad flags fail before --backend auto probes the backends", () => {
  test.each([
    [["run", "--prompt", "hi", "--temperature", "abc"], 'poot: --temperature must be a number, got "abc"'],
    [["run", "--prompt", "hi", "--threads", "0"], "poot: --threads must be >= 1, got 0"],
    [["run", "--prompt", "hi", "--weights", "f8"], 'poot: --weights must be f32 or bf16, got "f8"'],
    [["run", "--prompt", "hi", "-c", "1"], "poot: --context must be an integer >= 2, got 1"],
    [["chat", "--top-k", "x"], 'poot: --top-k must be an integer, got "x"'],
    [["serve", "--max-batch", "0"], "poot: --max-batch must be an integer >= 1, got 0"],
    [["serve", "--kv-pages", "0"], "poot: --kv-pages must be an integer >= 1, got 0"],
    [["serve", "--drain-seconds", "-1"], "poot: --drain-seconds must be >= 0, got -1"],
  ] as [string[], string][])("%j", async (args, says) => {
    const r = await poot(args);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`${says}\n`);
    expect(r.probes).toBe(0);
  });

  test("planted: an error found only by the load comes after the probe", { timeout: 60_000 }, async () => {
    const r = await poot(["run", "/nonexistent/model", "--prompt", "hi"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("poot: no such file or folder (file /nonexistent/model)\n");
    expect(r.probes).toBe(1);
  });
});
