// OpenAI response shapes: completions (`text_completion`) and chat (`chat.completion` and its
// `.chunk` stream form), with logprobs in each endpoint's format and usage counts.
import { randomUUID } from "node:crypto";
import type { PromptLogprob, ServeEngine } from "./engine.js";
import type { ChatOutput } from "./chat-request.js";
import type { FinishReason, TokenEvent } from "./scheduler-api.js";

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

/**
 * Renders /v1/completions responses. `logprobs` is the request's top count, or null. With `echo` and logprobs,
 * `echoLogprobs` holds each choice's prompt tokens (the first with a null logprob and null top_logprobs, as OpenAI
 * gives them), listed before the generated ones; their text offsets count from 0, the generated ones' from the
 * echoed text's length.
 */
export function completionRenderer(
  engine: ServeEngine,
  h: Header,
  logprobs: number | null,
  echo: readonly string[],
  echoLogprobs?: readonly (readonly PromptLogprob[])[],
): Renderer {
  const offsets = echo.map((e) => e.length);
  const lp = (index: number, tokens: readonly TokenEvent[], prompt: readonly PromptLogprob[] = []): unknown => {
    if (logprobs === null) return null;
    const text = [...prompt, ...tokens].map((t) => engine.tokenText(t.id));
    let p = 0;
    const text_offset = text.map((s, i) => {
      if (i < prompt.length) return (p += s.length) - s.length;
      const o = offsets[index]!;
      offsets[index] = o + s.length;
      return o;
    });
    const tops = [...prompt, ...tokens].map((t) =>
      t.top === null ? null : Object.fromEntries(t.top.map((x) => [engine.tokenText(x.id), x.logprob])),
    );
    return {
      tokens: text,
      token_logprobs: [...prompt, ...tokens].map((t) => t.logprob),
      top_logprobs: tops,
      text_offset,
    };
  };
  const promptOf = (index: number): readonly PromptLogprob[] => echoLogprobs?.[index] ?? [];
  const base = { id: h.id, object: "text_completion", created: h.created, model: h.model };
  return {
    opening: (index) =>
      echo[index] === ""
        ? null
        : {
            ...base,
            choices: [
              {
                index,
                text: echo[index],
                logprobs: echoLogprobs === undefined ? null : lp(index, [], promptOf(index)),
                finish_reason: null,
              },
            ],
          },
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
        logprobs: lp(c.index, c.tokens, promptOf(c.index)),
        finish_reason: c.finishReason,
      })),
      usage,
    }),
  };
}

/** An OpenAI tool call. */
interface ToolCall {
  readonly id: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: string };
}

/**
 * The tool call an answer holds, or null: in `tool` mode the answer is the constrained `{"name", "arguments"}`
 * document; in `auto` mode a text that is exactly such an object naming one of the tools counts too.
 */
export function toolCallOf(output: ChatOutput | undefined, text: string): ToolCall | null {
  if (output === undefined || (output.mode !== "tool" && output.mode !== "auto")) return null;
  let v: unknown;
  try {
    v = JSON.parse(text.trim());
  } catch {
    return null;
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (typeof o.name !== "string" || !output.tools.some((t) => t.function.name === o.name)) return null;
  if (o.arguments === null || typeof o.arguments !== "object" || Array.isArray(o.arguments)) return null;
  return {
    id: `call_${randomUUID().replace(/-/g, "").slice(0, 24)}`,
    type: "function",
    function: { name: o.name, arguments: JSON.stringify(o.arguments) },
  };
}

/**
 * Renders /v1/chat/completions responses. `logprobs` is top_logprobs when logprobs were asked, else null. With a
 * forced tool call (`output.mode` tool) a stream sends no content, then the call in one delta at the end.
 */
export function chatRenderer(engine: ServeEngine, h: Header, logprobs: number | null, output?: ChatOutput): Renderer {
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
  const forced = output?.mode === "tool";
  const streamed = new Map<number, string>();
  return {
    opening: (index) => ({
      ...chunkBase,
      choices: [
        { index, delta: { role: "assistant", content: forced ? null : "" }, logprobs: null, finish_reason: null },
      ],
    }),
    chunk: (index, text, tokens, finish) => {
      if (forced) {
        const all = (streamed.get(index) ?? "") + text;
        streamed.set(index, all);
        const call = finish === null ? null : toolCallOf(output, all);
        return {
          ...chunkBase,
          choices: [
            {
              index,
              delta: call === null ? {} : { tool_calls: [{ index: 0, ...call }] },
              logprobs: lp(tokens),
              finish_reason: finish === null ? null : call === null ? finish : "tool_calls",
            },
          ],
        };
      }
      return {
        ...chunkBase,
        choices: [
          {
            index,
            delta: text === "" && finish !== null ? {} : { content: text },
            logprobs: lp(tokens),
            finish_reason: finish,
          },
        ],
      };
    },
    usageChunk: (usage) => ({ ...chunkBase, choices: [], usage }),
    body: (choices, usage) => ({
      id: h.id,
      object: "chat.completion",
      created: h.created,
      model: h.model,
      choices: choices.map((c) => {
        const call = toolCallOf(output, c.text);
        return {
          index: c.index,
          message:
            call === null
              ? { role: "assistant", content: c.text, refusal: null }
              : { role: "assistant", content: null, refusal: null, tool_calls: [call] },
          logprobs: lp(c.tokens),
          finish_reason: call === null ? c.finishReason : "tool_calls",
        };
      }),
      usage,
    }),
  };
}
