// The typed result every validator runner returns, and the process helper they share.
// A runner distinguishes "the code is invalid" from "the tool is not installed" so tests skip honestly.

import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Outcome of running a validator on one artifact. */
export type ValidationResult =
  /** The validator accepted the artifact; `artifact` holds any product (e.g. a `.hsaco`). */
  | { readonly status: "ok"; readonly tool: string; readonly artifact?: Uint8Array }
  /** The validator rejected it; `message` is the validator's own diagnostic text. */
  | { readonly status: "invalid"; readonly tool: string; readonly message: string }
  /** The validator could not run (not installed, no adapter); `reason` says why. */
  | { readonly status: "unavailable"; readonly tool: string; readonly reason: string };

/** Result of one external process run. */
export interface ProcessResult {
  /** Exit code (null when killed or not started). */
  readonly code: number | null;
  /** Captured stdout + stderr. */
  readonly output: string;
  /** Set when the executable could not be started (ENOENT, EACCES). */
  readonly spawnError?: string;
}

/** Runs `file args`, capturing output; never throws for a non-zero exit. */
export function runProcess(file: string, args: readonly string[], timeoutMs = 120_000): Promise<ProcessResult> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (err && "code" in err && typeof err.code === "string") {
        resolve({ code: null, output, spawnError: `${err.code}: ${err.message}` });
        return;
      }
      const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
      resolve({ code, output });
    });
  });
}

const found = new Map<string, Promise<string | undefined>>();

/**
 * Finds the first candidate executable that starts with `probeArgs` (e.g. `--version`). The answer is remembered
 * for the life of the process, so validating many kernels probes each tool once.
 */
export function findTool(candidates: readonly string[], probeArgs: readonly string[]): Promise<string | undefined> {
  const key = JSON.stringify([candidates, probeArgs]);
  let hit = found.get(key);
  if (hit === undefined) {
    hit = (async () => {
      for (const c of candidates) {
        const r = await runProcess(c, probeArgs, 20_000);
        if (r.spawnError === undefined) return c;
      }
      return undefined;
    })();
    found.set(key, hit);
  }
  return hit;
}

/** Runs `body` with a fresh temporary directory that is removed afterwards. */
export async function withTempDir<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "poot-codegen-"));
  try {
    return await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
