// Validated request bodies -> generation requests: model check, prompt tokenization (chat template for
// chat), context-length and token-id checks, and OpenAI defaults (max_tokens 16 for completions, the rest
// of the context for chat), each failure an ApiError naming the parameter.
import type { ChatMessage } from "@poot/models";
import { ApiError } from "../errors.js";
import type { PromptLogprob, ServeEngine } from "./engine.js";
import { JsonGrammar } from "./json-grammar.js";
import type { GenerationRequest } from "./scheduler-api.js";
import { chatOutput, templateMessages, type ChatOutput } from "./chat-request.js";
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
  /** How a chat answer is read back (absent: plain text). */
  readonly output?: ChatOutput;
  /** The prompt tokens' logprobs of each generation (completions with `echo` and `logprobs`). */
  readonly echoLogprobs?: readonly (readonly PromptLogprob[])[];
}

/**
 * The prompt ids of a chat through the model's template, off the event loop. A template that refuses the
 * conversation (roles out of order, a missing system turn, ...) or a model without one is a 400 naming `messages`;
 * `noTemplate` says what to do instead.
 */
export async function encodeChatOr400(
  engine: ServeEngine,
  messages: readonly ChatMessage[],
  tools: readonly unknown[] | null,
  noTemplate: string,
): Promise<number[]> {
  let ids: number[] | null;
  try {
    ids = await engine.encodeChat(messages, tools);
  } catch (err) {
    throw new ApiError(
      400,
      "invalid_request",
      `the chat template rejected these messages: ${(err as Error).message}`,
      "messages",
    );
  }
  if (ids === null)
    throw new ApiError(400, "invalid_request", `this model has no chat template: ${noTemplate}`, "messages");
  return ids;
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
  // Prompt logprobs (echo with logprobs): one stateless prefill per prompt, shared by its choices.
  const wantPrompt = body.echo === true && body.logprobs !== null && body.logprobs !== undefined;
  const promptLps = wantPrompt
    ? await Promise.all(prompts.map((ids) => engine.promptLogprobs(ids, body.logprobs!)))
    : null;
  return {
    generations,
    echo,
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
    ...(promptLps === null
      ? {}
      : { echoLogprobs: prompts.flatMap((_, i) => Array.from({ length: n }, () => promptLps[i]!)) }),
  };
}

/** Plans a /v1/chat/completions request (rendering and tokenizing off the event loop). */
export async function planChat(engine: ServeEngine, body: ChatBody): Promise<PlannedRequest> {
  if ((body.top_logprobs ?? 0) > 0 && body.logprobs !== true)
    throw new ApiError(400, "invalid_value", "top_logprobs needs logprobs: true", "top_logprobs");
  const messages = templateMessages(body);
  const { output, constraint } = chatOutput(body);
  // The grammar is compiled here too (the engine compiles its own copy): schema errors are the client's 400s.
  const grammar =
    constraint === null
      ? null
      : new JsonGrammar(
          constraint.schema,
          output.mode === "tool"
            ? "tools"
            : body.response_format?.type === "json_schema"
              ? "response_format.json_schema.schema"
              : "response_format",
        );
  if (grammar !== null && body.ignore_eos === true)
    throw new ApiError(
      400,
      "invalid_value",
      "ignore_eos cannot be combined with JSON output or a forced tool call",
      "ignore_eos",
    );
  checkTextSize(
    engine,
    messages.reduce((n, m) => n + Buffer.byteLength(m.content), 0),
    "messages",
  );
  // The template writes BOS itself (HF apply_chat_template tokenizes without adding special tokens).
  const ids = await encodeChatOr400(
    engine,
    messages,
    output.tools.length > 0 ? output.tools : null,
    "use /v1/completions, or start the server with --chat-template FILE",
  );
  checkIds(engine, ids, "messages");
  const asked = body.max_completion_tokens ?? body.max_tokens;
  const param =
    body.max_completion_tokens !== null && body.max_completion_tokens !== undefined
      ? "max_completion_tokens"
      : "max_tokens";
  // OpenAI's chat default is "as many as fit": here, what fits both the context and the KV cache.
  const maxTokens = maxTokensFor(engine, ids.length, asked, engine.context, param, "messages");
  if (grammar !== null) {
    // The mask needs at most one token per character of the shortest document; fewer tokens could cut it short.
    const least = grammar.minLength(grammar.root);
    if (least > maxTokens)
      throw new ApiError(
        400,
        "invalid_value",
        `${param} is ${maxTokens}, but the shortest answer the ${output.mode === "tool" ? "tools allow" : "schema allows"} can take ${least} tokens; raise ${param}`,
        param,
      );
  }
  const logprobs = body.logprobs === true ? (body.top_logprobs ?? 0) : null;
  const generations = Array.from({ length: body.n ?? 1 }, (_, c) => ({
    ...generation(engine, body, ids, maxTokens, c, logprobs),
    constraint,
  }));
  return {
    generations,
    echo: generations.map(() => ""),
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
    output,
  };
}
