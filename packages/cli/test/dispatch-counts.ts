// The measurement behind the dispatch-count tests (cpu-dispatches.test.ts, gpu-dispatches.ts): `poot bench` of a
// model on a backend (3 prompt tokens, 3 generated, one run) and `poot compile` of the same model for that target,
// compiled for the KV layout bench reports (context = prompt + generated tokens, its page size and pages).
import { bufferIo, runCli } from "@poot/cli";
import { expect } from "vitest";

const P = 3,
  G = 3;

async function pootJson(argv: readonly string[]): Promise<Record<string, unknown>> {
  const io = bufferIo();
  const code = await runCli([...argv], { io });
  expect(code, io.stderr()).toBe(0);
  return JSON.parse(io.stdout()) as Record<string, unknown>;
}

/** bench's and compile's JSON reports of one model on one backend. */
export interface BenchAndCompile {
  /** `poot bench --json`: `decodeDispatchesPerToken` is the measured count. */
  readonly bench: Record<string, unknown>;
  /** `poot compile --json`: the prediction. */
  readonly compiled: Record<string, unknown>;
}

/**
 * Runs `poot bench MODEL --backend BACKEND … --json` and `poot compile MODEL --target BACKEND … --json` for bench's
 * KV layout; `benchFlags` and `compileFlags` are added to each (threads, numerics, mode).
 */
export async function benchAndCompile(
  model: string,
  backend: string,
  benchFlags: readonly string[] = [],
  compileFlags: readonly string[] = [],
): Promise<BenchAndCompile> {
  const bench = await pootJson([
    "bench",
    model,
    "--backend",
    backend,
    ...benchFlags,
    "--prompt-tokens",
    String(P),
    "--gen-tokens",
    String(G),
    "--runs",
    "1",
    "--json",
  ]);
  const layout = bench["kvLayout"] as { pageSize: number; pages: number };
  const compiled = await pootJson([
    "compile",
    model,
    "--target",
    backend,
    ...compileFlags,
    "--context",
    String(P + G),
    "--page-size",
    String(layout.pageSize),
    "--pages",
    String(layout.pages),
    "--json",
  ]);
  return { bench, compiled };
}
