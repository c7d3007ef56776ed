// Validated request bodies -> generation requests: model check, prompt tokenization (chat template for
// chat), context-length and token-id checks, and OpenAI defaults (max_tokens 16 for completions, the rest
// of the context for chat), each failure an ApiError naming the parameter.
import type { ChatMessage } from "@poot/models";
import { ApiError } from "../errors.js";
import type { ServeEngine } from "./engine.js";
import type { GenerationRequest } from "./scheduler.js";
import type { ChatBody, CommonBody, CompletionBody } from "./schemas.js";

/** A request turned into generations: one per (prompt, choice), prompt-major. */
export interface PlannedRequest {
  /** Generations to submit, in choice-index order. */
  readonly generations: GenerationRequest[];
  /** The prompt text each generation echoes (completions with `echo`), else "". */
  readonly echo: string[];
  /** Whether the client asked for a stream. */
  readonly stream: boolean;
  /** Whether a streamed response ends with a usage chunk. */
  readonly includeUsage: boolean;
}

/** Throws a 404 unless `model` is the served model's id. */
export function checkModel(model: string, served: string): void {
  if (model !== served)
    throw new ApiError(
      404,
      "model_not_found",
      `The model '${model}' does not exist: this server serves '${served}'`,
      "model",
    );
}

/** Throws a 400 naming `param` unless `ids` is non-empty and inside the vocabulary. */
export function checkIds(engine: ServeEngine, ids: readonly number[], param: string): void {
  if (ids.length === 0) throw new ApiError(400, "invalid_value", "the prompt has no tokens", param);
  for (const id of ids) {
    if (id >= engine.vocabSize)
      throw new ApiError(
        400,
        "invalid_value",
        `token id ${id} is outside the vocabulary [0, ${engine.vocabSize})`,
        param,
      );
  }
}

/**
 * Refuses, before tokenizing, a text that cannot fit the context whatever its tokens: a token stands for at most
 * `maxTokenBytes` bytes of text, so B bytes are at least B / maxTokenBytes tokens. The bound is halved for safety
 * (normalizers may shrink text a little). Tokenizing a megabyte costs seconds of CPU; this costs a byte count.
 */
export function checkTextSize(engine: ServeEngine, bytes: number, param: string): void {
  const least = Math.floor(bytes / (2 * engine.maxTokenBytes));
  if (least >= engine.context) {
    throw new ApiError(
      400,
      "context_length_exceeded",
      `This model's maximum context length is ${engine.context} tokens, but ${param} has ${bytes} bytes of text, which is at least ${least} tokens.`,
      param,
    );
  }
}

/**
 * The max_tokens a generation gets: asked for (must fit the context and the KV cache) or the default (clipped
 * to what fits both). `promptParam` names the prompt (`prompt` or `messages`), `param` the field asked.
 */
export function maxTokensFor(
  engine: ServeEngine,
  promptTokens: number,
  asked: number | null | undefined,
  fallback: number,
  param: string,
  promptParam: string,
): number {
  const limit = Math.min(engine.context, engine.kvTokens);
  const what =
    limit === engine.context
      ? `This model's maximum context length is ${engine.context} tokens`
      : `This server's KV cache holds ${engine.kvTokens} tokens (context ${engine.context})`;
  const room = limit - promptTokens;
  if (room < 1)
    throw new ApiError(
      400,
      "context_length_exceeded",
      `${what}, but ${promptParam} has ${promptTokens} tokens, which leaves no room to generate.`,
      promptParam,
    );
  if (asked === null || asked === undefined) return Math.min(fallback, room);
  if (asked > room) {
    throw new ApiError(
      400,
      "context_length_exceeded",
      `${what}. However, you requested ${promptTokens + asked} tokens (${promptTokens} in ${promptParam}, ${asked} for the completion). Reduce ${promptParam} or ${param} to at most ${room}.`,
      param,
    );
  }
  return asked;
}

/** The request's logit_bias as a map, each id checked against the vocabulary. */
function logitBiasOf(engine: ServeEngine, body: CommonBody): Map<number, number> {
  const bias = new Map<number, number>();
  for (const [key, value] of Object.entries(body.logit_bias ?? {})) {
    const id = Number(key);
    if (id >= engine.vocabSize)
      throw new ApiError(
        400,
        "invalid_value",
        `logit_bias names token id ${id}, outside the vocabulary [0, ${engine.vocabSize})`,
        "logit_bias",
      );
    bias.set(id, value);
  }
  return bias;
}

/** One generation of `body`'s sampling parameters over `prompt` (choice `choice` draws from seed + choice). */
export function generation(
  engine: ServeEngine,
  body: CommonBody,
  prompt: number[],
  maxTokens: number,
  choice: number,
  logprobs: number | null,
): GenerationRequest {
  const seed = body.seed ?? undefined;
  const stop =
    body.stop === null || body.stop === undefined ? [] : typeof body.stop === "string" ? [body.stop] : body.stop;
  return {
    prompt,
    maxTokens,
    // Each choice draws from its own stream: seed, seed + 1, ... so n > 1 choices differ but reproduce.
    sampling: {
      temperature: body.temperature ?? 1,
      topP: body.top_p ?? 1,
      ...(seed === undefined ? {} : { seed: seed + choice }),
      frequencyPenalty: body.frequency_penalty ?? 0,
      presencePenalty: body.presence_penalty ?? 0,
      topK: Math.max(0, body.top_k ?? 0),
      minP: body.min_p ?? 0,
      repetitionPenalty: body.repetition_penalty ?? 1,
      logitBias: logitBiasOf(engine, body),
    },
    stop,
    logprobs,
    ignoreEos: body.ignore_eos === true,
  };
}

/** Plans a /v1/completions request (tokenizing off the event loop). */
export async function planCompletion(engine: ServeEngine, body: CompletionBody): Promise<PlannedRequest> {
  if (body.echo === true && body.logprobs !== null && body.logprobs !== undefined) {
    throw new ApiError(400, "invalid_value", "echo with logprobs (prompt logprobs) is not supported", "echo");
  }
  const p = body.prompt;
  // A string, a list of strings, a list of ids, or a list of lists of ids (OpenAI's four prompt forms).
  const texts: (string | null)[] =
    typeof p === "string"
      ? [p]
      : p.length > 0 && typeof p[0] === "string"
        ? (p as string[])
        : p.length > 0 && typeof p[0] === "number"
          ? [null]
          : (p as number[][]).map(() => null);
  for (const t of texts) if (t !== null) checkTextSize(engine, Buffer.byteLength(t), "prompt");
  const prompts: number[][] =
    typeof p === "string" || typeof p[0] === "string"
      ? await Promise.all(texts.map((t) => engine.encode(t!, true)))
      : typeof p[0] === "number"
        ? [p as number[]]
        : (p as number[][]);
  const n = body.n ?? 1;
  const generations: GenerationRequest[] = [];
  const echo: string[] = [];
  prompts.forEach((ids, i) => {
    checkIds(engine, ids, "prompt");
    const maxTokens = maxTokensFor(engine, ids.length, body.max_tokens, 16, "max_tokens", "prompt");
    for (let c = 0; c < n; c++) {
      generations.push(generation(engine, body, ids, maxTokens, c, body.logprobs ?? null));
      echo.push(body.echo === true ? (texts[i] ?? engine.textOf(ids)) : "");
    }
  });
  return { generations, echo, stream: body.stream === true, includeUsage: body.stream_options?.include_usage === true };
}

/** Plans a /v1/chat/completions request (rendering and tokenizing off the event loop). */
export async function planChat(engine: ServeEngine, body: ChatBody): Promise<PlannedRequest> {
  if ((body.top_logprobs ?? 0) > 0 && body.logprobs !== true)
    throw new ApiError(400, "invalid_value", "top_logprobs needs logprobs: true", "top_logprobs");
  const messages: ChatMessage[] = body.messages.map((m) => ({
    // The templates know system/user/assistant; OpenAI's newer "developer" role is the system prompt.
    role: m.role === "developer" ? "system" : m.role,
    content: typeof m.content === "string" ? m.content : m.content.map((part) => part.text).join(""),
  }));
  checkTextSize(
    engine,
    messages.reduce((n, m) => n + Buffer.byteLength(m.content), 0),
    "messages",
  );
  let ids: number[] | null;
  try {
    // The template writes BOS itself (HF apply_chat_template tokenizes without adding special tokens).
    ids = await engine.encodeChat(messages);
  } catch (err) {
    // Templates raise on conversations they refuse (roles out of order, a missing system turn, ...).
    throw new ApiError(
      400,
      "invalid_request",
      `the chat template rejected these messages: ${(err as Error).message}`,
      "messages",
    );
  }
  if (ids === null)
    throw new ApiError(
      400,
      "invalid_request",
      "this model has no chat template: use /v1/completions, or start the server with --chat-template FILE",
      "messages",
    );
  checkIds(engine, ids, "messages");
  const asked = body.max_completion_tokens ?? body.max_tokens;
  const param =
    body.max_completion_tokens !== null && body.max_completion_tokens !== undefined
      ? "max_completion_tokens"
      : "max_tokens";
  // OpenAI's chat default is "as many as fit": here, what fits both the context and the KV cache.
  const maxTokens = maxTokensFor(engine, ids.length, asked, engine.context, param, "messages");
  const logprobs = body.logprobs === true ? (body.top_logprobs ?? 0) : null;
  const generations = Array.from({ length: body.n ?? 1 }, (_, c) =>
    generation(engine, body, ids, maxTokens, c, logprobs),
  );
  return {
    generations,
    echo: generations.map(() => ""),
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
  };
}
