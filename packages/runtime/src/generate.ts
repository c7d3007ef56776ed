// Generation over one session: prefill the prompt, then sample, stream and step until EOS, a stop string,
// the token limit or the context's end; sync, run-to-end and async (event-loop friendly) drivers.
import { Decoding, type GenerateOptions, type GenerationEvent, type GenerationResult } from "./decoding.js";
import type { Engine } from "./engine.js";
import type { Session } from "./session.js";

/**
 * Generates after `prompt` in `session` (a fresh session, or one continuing a conversation), yielding
 * events as tokens are sampled; the generator's return value is the {@link GenerationResult}.
 */
export function* generate(
  engine: Engine,
  session: Session,
  prompt: readonly number[],
  options: GenerateOptions,
): Generator<GenerationEvent, GenerationResult, void> {
  const d = new Decoding(engine, session, prompt, options);
  const t0 = performance.now();
  let logits = session.step(prompt);
  const prefillMs = performance.now() - t0;
  let decodeMs = 0,
    decodeSteps = 0;
  for (;;) {
    yield* d.accept(logits);
    if (d.finish !== null) break;
    const t1 = performance.now();
    logits = session.step();
    decodeMs += performance.now() - t1;
    decodeSteps++;
  }
  return {
    ids: d.ids,
    text: d.text,
    finishReason: d.finish,
    promptTokens: prompt.length,
    prefillMs,
    decodeMs,
    decodeSteps,
  };
}

/** Runs {@link generate} to the end and returns its result (events dropped). */
export function generateAll(
  engine: Engine,
  session: Session,
  prompt: readonly number[],
  options: GenerateOptions,
): GenerationResult {
  const it = generate(engine, session, prompt, options);
  for (;;) {
    const r = it.next();
    if (r.done === true) return r.value;
  }
}

/** {@link generate} as an async generator that yields to the event loop between tokens (for servers). */
export async function* generateAsync(
  engine: Engine,
  session: Session,
  prompt: readonly number[],
  options: GenerateOptions,
): AsyncGenerator<GenerationEvent, GenerationResult, void> {
  const it = generate(engine, session, prompt, options);
  for (;;) {
    const r = it.next();
    if (r.done === true) return r.value;
    yield r.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
