// bench/native-gemv.mjs takes `--name` (the result file's name part, as cli's cpu-vs-llama-cpp.mjs does), so a second
// run of the day with other settings does not replace the first; a name the result schema refuses is one line, before
// any kernel is loaded or timed.
// Planted: without --name the script ignored the flag and went on to the formats, where the unknown one below fails
// with a stack trace instead of the one-line refusal.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const BENCH = fileURLToPath(new URL("../bench/native-gemv.mjs", import.meta.url));

describe("bench/native-gemv.mjs --name", () => {
  it("refuses a name the result file cannot take, in one line, before any work", () => {
    const r = spawnSync(process.execPath, [BENCH, "--name", "Q8 fast", "--formats", "NOPE", "--runs", "1"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe('bench native-gemv: --name: lowercase letters, digits and dashes only, not "Q8 fast"\n');
  });
});
