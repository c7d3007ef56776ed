// The engine's steps: a session's tokens in prefill chunks, one batched decode step of several sessions, and the
// whole-prompt programs (logits or hidden rows) that embeddings and prompt logprobs read.
import type { Engine } from "./engine.js";
import type { EnginePrograms } from "./engine-programs.js";
import { RuntimeError, invariant } from "./errors.js";
import type { Session } from "./session.js";

/** See {@link Engine.runSequence}: runs `ids` for one session in prefill chunks; the last token's logits [V]. */
export function runSequence(
  engine: Engine,
  programs: EnginePrograms,
  session: Session,
  start: number,
  ids: readonly number[],
): Float32Array {
  invariant(ids.length > 0, "runSequence with no tokens");
  session.grow(start + ids.length);
  const state = engine.state();
  const V = engine.config.vocabSize;
  let pos = start,
    off = 0;
  let last: Float32Array | null = null;
  for (const c of engine.chunks(ids.length)) {
    const t0 = performance.now();
    // A chunk's logits are read for its last token only: its program runs the head on that row alone.
    const p = engine.decodeProgram(c, "last");
    p.writeSlot("ids", ids.slice(off, off + c));
    p.writeSlot("pos", [pos]);
    engine.writePaging(p, [{ session, start: pos }], c);
    if (c === 1) programs.decodeStep(p, state);
    else p.run(state);
    const logits = p.readOutput("logits") as Float32Array;
    // readOutput without `into` returns a fresh copy: a one-token step's logits are the row itself (a 0.5 MB
    // slice a token was measurable on the CUDA backend, decision 0807).
    last = logits.length === V ? logits : logits.slice((c - 1) * V, c * V);
    const ms = performance.now() - t0;
    if (c > 1) {
      engine.stats.prefillTokens += c;
      engine.stats.prefillMs += ms;
    } else {
      engine.stats.decodeTokens += 1;
      engine.stats.decodeMs += ms;
    }
    pos += c;
    off += c;
  }
  return last!;
}

/** See {@link Engine.promptLogits}: every token's logits [T·V] from one program in a fresh session's pages. */
export function promptLogits(engine: Engine, ids: readonly number[]): Float32Array {
  const s = engine.openSession();
  try {
    s.feed(ids);
    s.grow(ids.length);
    const p = engine.decodeProgram(ids.length);
    p.writeSlot("ids", ids);
    p.writeSlot("pos", [0]);
    engine.writePaging(p, [{ session: s, start: 0 }], ids.length);
    p.run(engine.state());
    return (p.readOutput("logits") as Float32Array).slice();
  } finally {
    s.release();
  }
}

/** See {@link Engine.promptHidden} and {@link Engine.prefillLogits}: a stateless prefill padded to a power of two. */
export function statelessPrefill(
  engine: Engine,
  programs: EnginePrograms,
  ids: readonly number[],
  output: "logits" | "hidden",
): Float32Array {
  if (ids.length === 0) throw new RuntimeError("bad-tokens", "no token ids given");
  if (ids.length > engine.context)
    throw new RuntimeError("context-overflow", `${ids.length} tokens do not fit the context of ${engine.context}`, {
      value: ids.length,
    });
  const V = engine.config.vocabSize;
  for (const id of ids)
    if (!Number.isSafeInteger(id) || id < 0 || id >= V)
      throw new RuntimeError("bad-tokens", `token id ${id} is outside the vocabulary [0, ${V})`, { value: id });
  if (engine.pipeline !== null)
    throw new RuntimeError(
      "bad-config",
      `stateless ${output} of an engine split into blocks across devices is not supported`,
    );
  let T = 1;
  while (T < ids.length) T *= 2;
  const p = programs.staged(`${output}-${T}`, "prefill", () =>
    engine.model.graph({ kind: "prefill", tokens: T, output }),
  );
  const padded = new Int32Array(T);
  padded.set(ids);
  p.writeSlot("ids", padded);
  p.run();
  const width = output === "hidden" ? engine.config.hiddenSize : V;
  return (p.readOutput(output) as Float32Array).slice(0, ids.length * width);
}

/** See {@link Engine.stepBatch}: one batched decode step of `sessions`; each session's logits [V]. */
export function stepBatch(engine: Engine, sessions: readonly Session[]): Float32Array[] {
  if (new Set(sessions).size !== sessions.length)
    throw new RuntimeError("bad-session", "a session appears twice in one batch");
  for (const s of sessions) s.checkStep();
  if (sessions.length === 1) return [sessions[0]!.step()];
  const B = sessions.length,
    V = engine.config.vocabSize;
  const last = sessions.map((s) => s.prefillAllButLast());
  const prog = engine.batchProgram(B);
  for (const s of sessions) s.grow(s.length + 1);
  const t0 = performance.now();
  // Every session's pages and lane are in the one shared StateSet: the step reads them through its slots.
  prog.writeSlot("ids", last);
  prog.writeSlot(
    "pos",
    sessions.map((s) => s.length),
  );
  engine.writePaging(
    prog,
    sessions.map((s) => ({ session: s, start: s.length })),
    1,
  );
  prog.run(engine.state());
  const logits = prog.readOutput("logits") as Float32Array;
  const rows = sessions.map((s, i) => {
    s.advance([last[i]!]);
    return logits.slice(i * V, (i + 1) * V);
  });
  engine.stats.decodeTokens += B;
  engine.stats.decodeMs += performance.now() - t0;
  return rows;
}
