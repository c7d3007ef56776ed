// OpenAI response shapes: completions (`text_completion`) and chat (`chat.completion` and its
// `.chunk` stream form), with logprobs in each endpoint's format and usage counts.
import type { ServeEngine } from "./engine.js";
import type { FinishReason, TokenEvent } from "./scheduler.js";

/** A finished choice. */
export interface ChoiceResult {
  readonly index: number;
  readonly text: string;
  readonly tokens: readonly TokenEvent[];
  readonly finishReason: FinishReason;
}

/** OpenAI usage counts. */
export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** Renders one endpoint's bodies and stream chunks. */
export interface Renderer {
  /** The chunk a stream opens each choice with (chat: the assistant role), or null. */
  opening(index: number): unknown;
  /** A stream chunk: text and tokens of one choice since the last chunk, and its finish reason at the end. */
  chunk(index: number, text: string, tokens: readonly TokenEvent[], finish: FinishReason | null): unknown;
  /** The last stream chunk with usage (no choices). */
  usageChunk(usage: Usage): unknown;
  /** The whole non-streamed body. */
  body(choices: readonly ChoiceResult[], usage: Usage): unknown;
}

interface Header {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

const utf8 = new TextEncoder();

/** Renders /v1/completions responses. `logprobs` is the request's top count, or null. */
export function completionRenderer(
  engine: ServeEngine,
  h: Header,
  logprobs: number | null,
  echo: readonly string[],
): Renderer {
  const offsets = echo.map((e) => e.length);
  const lp = (index: number, tokens: readonly TokenEvent[]): unknown => {
    if (logprobs === null) return null;
    const text = tokens.map((t) => engine.tokenText(t.id));
    const text_offset = text.map((s) => {
      const o = offsets[index]!;
      offsets[index] = o + s.length;
      return o;
    });
    return {
      tokens: text,
      token_logprobs: tokens.map((t) => t.logprob),
      top_logprobs: tokens.map((t) =>
        Object.fromEntries((t.top ?? []).map((x) => [engine.tokenText(x.id), x.logprob])),
      ),
      text_offset,
    };
  };
  const base = { id: h.id, object: "text_completion", created: h.created, model: h.model };
  return {
    opening: (index) =>
      echo[index] === ""
        ? null
        : { ...base, choices: [{ index, text: echo[index], logprobs: null, finish_reason: null }] },
    chunk: (index, text, tokens, finish) => ({
      ...base,
      choices: [{ index, text, logprobs: lp(index, tokens), finish_reason: finish }],
    }),
    usageChunk: (usage) => ({ ...base, choices: [], usage }),
    body: (choices, usage) => ({
      ...base,
      choices: choices.map((c) => ({
        index: c.index,
        text: echo[c.index]! + c.text,
        logprobs: lp(c.index, c.tokens),
        finish_reason: c.finishReason,
      })),
      usage,
    }),
  };
}

/** Renders /v1/chat/completions responses. `logprobs` is top_logprobs when logprobs were asked, else null. */
export function chatRenderer(engine: ServeEngine, h: Header, logprobs: number | null): Renderer {
  const entry = (id: number, logprob: number): { token: string; logprob: number; bytes: number[] } => {
    const token = engine.tokenText(id);
    return { token, logprob, bytes: [...utf8.encode(token)] };
  };
  const lp = (tokens: readonly TokenEvent[]): unknown =>
    logprobs === null
      ? null
      : {
          content: tokens.map((t) => ({
            ...entry(t.id, t.logprob!),
            top_logprobs: (t.top ?? []).map((x) => entry(x.id, x.logprob)),
          })),
          refusal: null,
        };
  const chunkBase = { id: h.id, object: "chat.completion.chunk", created: h.created, model: h.model };
  return {
    opening: (index) => ({
      ...chunkBase,
      choices: [{ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }],
    }),
    chunk: (index, text, tokens, finish) => ({
      ...chunkBase,
      choices: [
        {
          index,
          delta: text === "" && finish !== null ? {} : { content: text },
          logprobs: lp(tokens),
          finish_reason: finish,
        },
      ],
    }),
    usageChunk: (usage) => ({ ...chunkBase, choices: [], usage }),
    body: (choices, usage) => ({
      id: h.id,
      object: "chat.completion",
      created: h.created,
      model: h.model,
      choices: choices.map((c) => ({
        index: c.index,
        message: { role: "assistant", content: c.text, refusal: null },
        logprobs: lp(c.tokens),
        finish_reason: c.finishReason,
      })),
      usage,
    }),
  };
}
