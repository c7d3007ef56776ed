// With `--backend auto` (the default), a bad flag value fails at once, before the backends are probed (about a
// second of GPU driver start-up): each command's flag check (run, chat, serve, generate, logits, bench) runs in
// runCli's preAction hook ahead of resolveAuto.
// Planted: a request whose error only the load finds (a missing model) does probe, so the counter sees probes.
import { bufferIo, runCli } from "@poot/cli";
import { BACKEND_KINDS } from "@poot/graph-plan";
import { describe, expect, test } from "vitest";
import { autoProbes } from "../src/commands/backend-probe.js";

/** Runs `poot args` in-process; its exit code, stderr, and how many auto probes it made. */
async function poot(args: string[]): Promise<{ code: number; stderr: string; probes: number }> {
  const io = bufferIo();
  const before = autoProbes;
  const code = await runCli(args, { io });
  return { code, stderr: io.stderr(), probes: autoProbes - before };
}

/** `poot generate` and `poot logits` on `--backend auto` (their default is eval). */
const GENERATE = ["generate", "m", "--ids", "1", "--greedy", "--backend", "auto"];
const LOGITS = ["logits", "m", "--ids", "1", "--backend", "auto"];
const TARGETS = BACKEND_KINDS.join(", ");

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
    [["run", "--prompt", "hi", "--numerics", "quick"], 'poot: --numerics must be exact or fast, got "quick"'],
    [["serve", "--numerics", "quick"], 'poot: --numerics must be exact or fast, got "quick"'],
    // generate, logits and bench check theirs before the probe too (generate and logits run on eval unless told).
    [[...GENERATE, "--max-tokens", "0"], 'poot: --max-tokens must be a positive integer, got "0"'],
    [[...GENERATE, "--ids", "1,x"], 'poot: --ids must be comma-separated non-negative integers, got "1,x"'],
    [[...GENERATE, "--numerics", "quick"], 'poot: --numerics must be exact or fast, got "quick"'],
    [[...GENERATE, "--weights", "f8"], 'poot: --weights must be f32 or bf16, got "f8"'],
    [[...GENERATE, "--compiled", "--target", "tpu"], `poot: --target must be one of ${TARGETS}, got "tpu"`],
    [["generate", "m", "--ids", "1", "--backend", "auto"], "poot: only greedy decoding is available: pass --greedy"],
    [[...LOGITS, "--ids", ""], 'poot: --ids must be comma-separated non-negative integers, got ""'],
    [[...LOGITS, "--activations", "fp4"], 'poot: --activations must be f32, fp8-static or fp8-dynamic, got "fp4"'],
    [[...LOGITS, "--compiled", "--target", "tpu"], `poot: --target must be one of ${TARGETS}, got "tpu"`],
    [["bench", "m", "--gen-tokens", "1"], "poot: --prompt-tokens >= 1, --gen-tokens >= 2 and --runs >= 1 are required"],
    [["bench", "m", "--runs", "x"], 'poot: --runs must be an integer, got "x"'],
    [["bench", "m", "--decode-loop", "x"], 'poot: --decode-loop must be auto, steps or host-launches, got "x"'],
    [["bench", "m", "--threads", "0"], "poot: --threads must be >= 1, got 0"],
    [["bench", "m", "--numerics", "quick"], 'poot: --numerics must be exact or fast, got "quick"'],
    [
      ["bench", "m", "--horizontal-fusion", "x"],
      'poot: --horizontal-fusion must be grouped or shared-epilogue, got "x"',
    ],
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
