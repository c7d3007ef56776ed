// What the GPU-machine fixture entry points (cuda-fixtures, devices-h200) share: a report's named checks (each
// timed, a throw recorded as a failure) and one fixtures/gguf file through the runtime against its f64 reference
// rows, weights kept packed.
import * as fs from "node:fs";
import type { Executor } from "@poot/executor";
import { Engine } from "@poot/runtime";
import { relErr } from "./hf-family.js";

/** A little-endian float32 file (the fixtures' `.bin` references). */
export function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** A report's checks by name, and how many failed (`ok` not true, or threw). */
export class FixtureChecks {
  /** Each check's record, by name (skipped ones are added by the caller). */
  readonly results: Record<string, Record<string, unknown>> = {};
  /** Checks whose record was not `ok: true`. */
  failures = 0;

  /**
   * @param after - called with each finished check (to print or save it).
   * @param errorChars - how much of a thrown error's stack a record keeps.
   */
  constructor(
    private readonly after: (name: string, r: Record<string, unknown>) => void,
    private readonly errorChars = Infinity,
  ) {}

  /** Runs `f`, timing it in `seconds`; a throw becomes `{ ok: false, error }`. */
  check(name: string, f: () => Record<string, unknown>): void {
    const t0 = performance.now();
    let r: Record<string, unknown>;
    try {
      r = f();
    } catch (e) {
      r = { ok: false, error: String((e as Error).stack ?? e).slice(0, this.errorChars) };
    }
    r.seconds = Math.round(performance.now() - t0) / 1000;
    if (r.ok !== true) this.failures++;
    this.results[name] = r;
    this.after(name, r);
  }
}

/** What {@link checkGgufPrompt} measured. */
export interface GgufPromptResult {
  /** The worst of the two prefill chunks' last rows. */
  readonly prefillRelErr: number;
  /** The worst single-token decode position. */
  readonly decodeRelErr: number;
  /** The executor's weight bytes on the device once loaded. */
  readonly weightsHeld: number;
}

/**
 * The GGUF `file` on `executor` (closed afterwards with the engine): the prompt `ids` in prefill chunks of 8
 * (positions 7 and 15 against `want`), then the rest of the prompt decoded one token at a time.
 */
export function checkGgufPrompt(
  file: string,
  executor: Executor,
  ids: readonly number[],
  want: (p: number) => Float32Array,
): GgufPromptResult {
  const engine = Engine.load(file, { executor, context: 24, prefillChunk: 8, tokenizer: null });
  try {
    const s = engine.openSession();
    let prefill = 0,
      decode = 0;
    for (const end of [8, 16]) prefill = Math.max(prefill, relErr(s.step(ids.slice(s.length, end)), want(end - 1)));
    for (let p = 16; p < ids.length; p++) decode = Math.max(decode, relErr(s.step([ids[p]!]), want(p)));
    s.release();
    return { prefillRelErr: prefill, decodeRelErr: decode, weightsHeld: executor.deviceBytes().weights };
  } finally {
    engine.close();
    executor.dispose();
  }
}
