// Generation over one session: prefill the prompt, then sample, stream and step until EOS, a stop string,
// the token limit or the context's end; sync, run-to-end and async (event-loop friendly) drivers.
import { Decoding, type GenerateOptions, type GenerationEvent, type GenerationResult } from "./decoding.js";
import type { Engine } from "./engine.js";
import type { Session } from "./session.js";

/** Greedy ids per `Engine.greedy` call of a streaming generation (events are released after each call). */
const GREEDY_CHUNK = 32;

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
  yield* d.accept(logits);
  // Greedy without penalties: the engine's greedy loop picks the ids (on the device where the executor has one,
  // decision 2201), a few launches at a time so events still stream; the host never reads the logits.
  while (d.finish === null && d.argmaxOnly && engine.greedyLoopAvailable()) {
    const first = session.unqueue();
    const held = session.length;
    const t1 = performance.now();
    const events: GenerationEvent[] = [];
    const count = Math.min(GREEDY_CHUNK, session.remaining, options.maxTokens - d.ids.length);
    const ids = engine.greedy(session, first, count, {
      stop: (id, i) => {
        // As step by step: the session would hold `first` and i ids before this one, nothing queued.
        events.push(...d.acceptGreedy(id, engine.context - held - 1 - i));
        return d.finish !== null;
      },
    });
    decodeMs += performance.now() - t1;
    decodeSteps += ids.length;
    // The last id is returned, not run: queue it as accept would (not after a stop string or EOS).
    if (d.finish === null || (d.finish === "length" && session.remaining >= 1)) session.commit(ids[ids.length - 1]!);
    yield* events;
  }
  while (d.finish === null) {
    const t1 = performance.now();
    logits = session.step();
    decodeMs += performance.now() - t1;
    decodeSteps++;
    yield* d.accept(logits);
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
