// `POOT_TIMING=1 poot run`: one stderr line per start phase, in order, the executor's summed phases (lowering, the
// device's code load, weights read) at the first token; without the variable, no timing line at all.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { bufferIo, runCli } from "@poot/cli";
import { afterEach, describe, expect, test } from "vitest";
import { findDemoModel } from "../src/commands/backends.js";

const PHASES = [
  "node start + imports + flags",
  "executor (device context)",
  "model open (header parse)",
  "tokenizer",
  "engine (bind weights)",
  "stage prompt programs (lower, code load)",
  "first token (prefill, lazy weight read/upload)",
];

async function run(timing: boolean): Promise<{ code: number; err: string }> {
  const saved = { t: process.env.POOT_TIMING, c: process.env.POOT_CACHE_DIR };
  process.env.POOT_CACHE_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "poot-timing-"));
  if (timing) process.env.POOT_TIMING = "1";
  else delete process.env.POOT_TIMING;
  try {
    const io = bufferIo();
    const model = findDemoModel()!;
    const code = await runCli(["run", model, "--backend", "cpu", "--prompt", "Hello", "--max-tokens", "1"], { io });
    return { code, err: io.stderr() };
  } finally {
    fs.rmSync(process.env.POOT_CACHE_DIR, { recursive: true, force: true });
    for (const [k, v] of [
      ["POOT_TIMING", saved.t],
      ["POOT_CACHE_DIR", saved.c],
    ] as const)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

describe("POOT_TIMING=1 poot run", () => {
  afterEach(() => {
    delete process.env.POOT_TIMING;
  });
  test("prints every phase once, in order, with the executor's lowering, code load and weight reads", async () => {
    const r = await run(true);
    expect(r.code, r.err).toBe(0);
    const lines = r.err.split("\n").filter((l) => l.startsWith("poot timing: "));
    expect(lines.map((l) => /^poot timing: (.*?) \+[\d.]+ ms \(at [\d.]+ ms\)/.exec(l)?.[1])).toEqual(PHASES);
    const last = lines.at(-1)!;
    for (const p of ["lower", "device code load", "weights read"])
      expect(last).toMatch(new RegExp(`[:,] ${p} [\\d.]+`));
  }, 120_000);
  test("prints none without it", async () => {
    const r = await run(false);
    expect(r.code, r.err).toBe(0);
    expect(r.err).not.toContain("poot timing:");
  }, 120_000);
});
