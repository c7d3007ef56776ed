// Habits of llama.cpp and ollama users through the bin: the prompt on stdin, short flags, `-m demo`, and
// `--json`, checked against the demo model's float64 transformers reference (reference.json).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const pkgDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const bin = path.join(pkgDir, "bin/poot.mjs");
const ref = JSON.parse(fs.readFileSync(path.join(pkgDir, "../../models/demo/reference.json"), "utf8")) as {
  prompt: string;
  greedy_ids: number[];
  greedy_text: string;
};

test("the prompt from stdin, -m demo -n N, --json: the greedy text equals transformers'", { timeout: 180_000 }, () => {
  const r = spawnSync(
    process.execPath,
    [
      bin,
      "run",
      "-m",
      "demo",
      "-n",
      String(ref.greedy_ids.length),
      "--temperature",
      "0",
      "--ignore-eos",
      "-s",
      "7",
      "-t",
      "1",
      "--json",
    ],
    { input: `${ref.prompt}\n`, encoding: "utf8" },
  );
  expect(r.status, r.stderr).toBe(0);
  const j = JSON.parse(r.stdout) as {
    text: string;
    generatedTokens: number;
    finishReason: string;
    backend: string;
    auto: boolean;
    decodeTokensPerSecond: number;
  };
  expect(j.text).toBe(ref.greedy_text);
  expect(j.generatedTokens).toBe(ref.greedy_ids.length);
  expect(j.finishReason).toBe("length");
  expect(j.auto).toBe(true);
  expect(j.decodeTokensPerSecond).toBeGreaterThan(0);
});

test("no prompt and an empty stdin, or the model given twice: one line, exit 1", { timeout: 60_000 }, () => {
  const empty = spawnSync(process.execPath, [bin, "run", "-n", "2"], { input: "", encoding: "utf8" });
  expect(empty.status).toBe(1);
  expect(empty.stderr).toBe("poot: no prompt: stdin was empty; pass -p TEXT (--prompt) or pipe a prompt\n");
  const twice = spawnSync(process.execPath, [bin, "run", "demo", "-m", "demo", "-p", "hi"], { encoding: "utf8" });
  expect(twice.status).toBe(1);
  expect(twice.stderr).toMatch(
    /^poot: give the model once: MODEL \(\S+(models\/demo|demo-model\/model)\) or -m \(demo\)\n$/,
  );
});
