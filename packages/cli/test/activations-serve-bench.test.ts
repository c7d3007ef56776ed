// `--activations` on `poot serve` and `poot bench` (decision 2610), the option every model command shares: served
// greedy completions of llama3-fp8-static with fp8-static are transformers' static-scale greedy ids
// (tools/hf-quant/make_fp8_static.py), the default the exact-activation ones; bench runs it; a checkpoint without
// static scales, or a bad value, is one line naming the problem.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { bufferIo, runCli } from "@poot/cli";
import { loadTokenizer } from "@poot/models";
import { startServe, type ServeCliOptions } from "@poot/serve";
import { fixture } from "@poot/testkit";
import { afterAll, describe, expect, test } from "vitest";
import { createExecutor } from "../src/commands/backends.js";

const dir = fixture("hf", "llama3-fp8-static");
const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
  prompt_ids: number[];
  greedy_ids: number[];
  static_greedy_ids: number[];
};
// The FP8 fixture has no tokenizer, which the server needs: its llama3 source's (the same 512 ids) beside it.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-fp8-serve-"));
for (const f of fs.readdirSync(dir)) fs.symlinkSync(path.join(dir, f), path.join(tmp, f));
fs.copyFileSync(path.join(fixture("hf", "llama3"), "tokenizer.json"), path.join(tmp, "tokenizer.json"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const options: ServeCliOptions = {
  backend: "eval",
  host: "127.0.0.1",
  port: "0",
  maxBatch: "1",
  maxQueue: "4",
  weights: "f32",
  prepare: false,
  ctx: "64",
};

/** The served greedy completion of the reference prompt (its ids) with `activations`. */
async function servedGreedy(activations?: string): Promise<string> {
  const started = await startServe(
    tmp,
    { ...options, ...(activations === undefined ? {} : { activations }) },
    bufferIo(),
    createExecutor,
  );
  try {
    const r = await fetch(`${started.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: path.basename(tmp),
        prompt: ref.prompt_ids,
        max_tokens: ref.static_greedy_ids.length,
        temperature: 0,
        ignore_eos: true,
      }),
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as { choices: { text: string }[] }).choices[0]!.text;
  } finally {
    await started.close();
  }
}

describe("--activations on poot serve and poot bench", () => {
  test("serve --activations fp8-static answers transformers' static-scale greedy ids", async () => {
    const tok = loadTokenizer(tmp);
    const [statics, exact] = [ref.static_greedy_ids, ref.greedy_ids].map((ids) =>
      tok.decode(ids, { skipSpecial: true }),
    );
    expect(statics).not.toBe(exact);
    expect(await servedGreedy("fp8-static")).toBe(statics);
    // Planted: the default (exact activations) answers the other reference, not this one.
    expect(await servedGreedy()).toBe(exact);
  }, 300_000);

  test("serve and bench: a bad value or a checkpoint without static scales is one line", async () => {
    await expect(
      startServe(fixture("hf", "llama3-fp8"), { ...options, activations: "fp8-static" }, bufferIo(), createExecutor),
    ).rejects.toThrow(/input_scale/);
    await expect(startServe(tmp, { ...options, activations: "fp8" }, bufferIo(), createExecutor)).rejects.toThrow(
      '--activations must be f32, fp8-static or fp8-dynamic, got "fp8"',
    );
    for (const argv of [
      ["bench", fixture("hf", "llama3-fp8"), "--backend", "eval", "--activations", "fp8-static"],
      ["serve", fixture("hf", "llama3-fp8"), "--backend", "eval", "--activations", "fp8"],
    ]) {
      const io = bufferIo();
      expect(await runCli(argv, { io })).not.toBe(0);
      const lines = io.stderr().trim().split("\n");
      expect(lines, io.stderr()).toHaveLength(1);
      expect(lines[0]).toMatch(argv.includes("fp8") ? /--activations must be/ : /input_scale/);
    }
  }, 120_000);

  test("bench --activations fp8-static runs the static-scale forward", async () => {
    const io = bufferIo();
    const argv = ["bench", dir, "--backend", "cpu", "--activations", "fp8-static", "--prompt-tokens", "8"];
    expect(await runCli([...argv, "--gen-tokens", "4", "--runs", "1", "--json"], { io }), io.stderr()).toBe(0);
    expect(JSON.parse(io.stdout())).toMatchObject({ backend: "cpu" });
  }, 120_000);
});
