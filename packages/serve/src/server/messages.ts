// Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) over the same scheduler as the
// OpenAI endpoints: the system prompt and messages go through the model's chat template, a final assistant message
// is a prefill the answer continues, and the answer is one text block, whole or as Anthropic's server-sent events
// (message_start, content_block_start, ping, content_block_delta..., content_block_stop, message_delta,
// message_stop). Errors take Anthropic's shape, `{type: "error", error: {type, message}}`.
import { randomUUID } from "node:crypto";
import type { FastifyReply } from "fastify";
import type { ChatMessage } from "@poot/models";
import { ApiError } from "../errors.js";
import type { JsonConstraintSpec, ServeEngine } from "./engine.js";
import { JsonGrammar } from "./json-grammar.js";
import {
  checkIds,
  checkTextSize,
  encodeChatOr400,
  generation,
  maxTokensFor,
  toolCallSchema,
  type ChatOutput,
} from "./requests.js";
import { toolCallOf } from "./responses.js";
import type { ChatTool } from "./schemas.js";
import type { GenerationEvent, GenerationRequest, ServeScheduler } from "./scheduler.js";

const text = { type: "string" } as const;
const textBlock = {
  type: "object",
  required: ["type", "text"],
  properties: { type: { const: "text" }, text, cache_control: { type: "object" }, citations: {} },
} as const;

/** A tool call of an earlier assistant turn. */
const toolUseBlock = {
  type: "object",
  required: ["type", "id", "name", "input"],
  properties: {
    type: { const: "tool_use" },
    id: text,
    name: text,
    input: { type: "object" },
    cache_control: { type: "object" },
  },
} as const;

/** A tool's result, in a user turn. */
const toolResultBlock = {
  type: "object",
  required: ["type", "tool_use_id"],
  properties: {
    type: { const: "tool_result" },
    tool_use_id: text,
    content: { anyOf: [text, { type: "array", items: textBlock }] },
    is_error: { type: "boolean" },
    cache_control: { type: "object" },
  },
} as const;

/** The body of `POST /v1/messages` this server implements (text content; no tools, images or thinking). */
export const messagesBody = {
  type: "object",
  required: ["model", "max_tokens", "messages"],
  properties: {
    model: { type: "string", minLength: 1 },
    max_tokens: { type: "integer", minimum: 1 },
    messages: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        required: ["role", "content"],
        properties: {
          role: { enum: ["user", "assistant"] },
          content: { anyOf: [text, { type: "array", items: { anyOf: [textBlock, toolUseBlock, toolResultBlock] } }] },
        },
      },
    },
    system: { anyOf: [text, { type: "array", items: textBlock }] },
    tools: {
      type: "array",
      maxItems: 128,
      items: {
        type: "object",
        required: ["name", "input_schema"],
        properties: {
          name: { type: "string", pattern: "^[a-zA-Z0-9_-]{1,64}$" },
          description: { type: "string" },
          input_schema: { type: "object" },
          type: { const: "custom" },
          cache_control: { type: "object" },
        },
      },
    },
    tool_choice: {
      type: "object",
      required: ["type"],
      properties: {
        type: { enum: ["auto", "any", "tool", "none"] },
        name: { type: "string" },
        disable_parallel_tool_use: { type: "boolean" },
      },
    },
    stop_sequences: { type: "array", maxItems: 16, items: { type: "string", minLength: 1 } },
    temperature: { type: "number", minimum: 0, maximum: 1 },
    top_p: { type: "number", exclusiveMinimum: 0, maximum: 1 },
    top_k: { type: "integer", minimum: 0 },
    stream: { type: "boolean" },
    metadata: { type: "object" },
    output_config: {
      type: "object",
      properties: {
        effort: {},
        format: {
          anyOf: [
            { type: "null" },
            {
              type: "object",
              required: ["type", "schema"],
              properties: { type: { const: "json_schema" }, schema: { type: "object" } },
            },
          ],
        },
      },
    },
  },
} as const;

/** The body of `POST /v1/messages/count_tokens`. */
export const countTokensBody = {
  type: "object",
  required: ["model", "messages"],
  properties: {
    model: messagesBody.properties.model,
    messages: messagesBody.properties.messages,
    system: messagesBody.properties.system,
    tools: messagesBody.properties.tools,
  },
} as const;

type TextBlocks = string | { type: "text"; text: string }[];
type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content?: TextBlocks; is_error?: boolean };
type Blocks = string | Block[];

/** A validated Anthropic tool. */
export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

/** A validated /v1/messages body. */
export interface MessagesBody {
  model: string;
  max_tokens: number;
  messages: { role: "user" | "assistant"; content: Blocks }[];
  system?: TextBlocks;
  tools?: AnthropicTool[];
  tool_choice?: { type: "auto" | "any" | "tool" | "none"; name?: string };
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stream?: boolean;
  output_config?: { format?: { type: "json_schema"; schema: object } | null };
}

/** A validated /v1/messages/count_tokens body. */
export type CountTokensBody = Pick<MessagesBody, "model" | "messages" | "system" | "tools">;

const joined = (b: TextBlocks | Blocks): string =>
  typeof b === "string" ? b : b.map((x) => (x.type === "text" ? x.text : "")).join("");

/** Anthropic tools in OpenAI's function shape (what chat templates and the tool-call schema take). */
export function asFunctions(tools: readonly AnthropicTool[]): ChatTool[] {
  return tools.map((t) => ({
    type: "function",
    function: {
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      parameters: t.input_schema,
    },
  }));
}

/**
 * The turns as the chat template takes them (HF's shapes): an assistant's tool_use blocks become its tool_calls,
 * a user's tool_result blocks become `tool` messages before its text.
 */
function turnsOf(body: CountTokensBody): ChatMessage[] {
  const out: ChatMessage[] = [];
  body.messages.forEach((m, i) => {
    if (typeof m.content === "string") {
      out.push({ role: m.role, content: m.content });
      return;
    }
    const uses = m.content.filter((b) => b.type === "tool_use");
    const results = m.content.filter((b) => b.type === "tool_result");
    if (uses.length > 0 && m.role !== "assistant")
      throw new ApiError(
        400,
        "invalid_value",
        `messages[${i}].content: tool_use blocks belong to assistant turns`,
        `messages[${i}].content`,
      );
    if (results.length > 0 && m.role !== "user")
      throw new ApiError(
        400,
        "invalid_value",
        `messages[${i}].content: tool_result blocks belong to user turns`,
        `messages[${i}].content`,
      );
    for (const r of results)
      out.push({
        role: "tool",
        tool_call_id: r.tool_use_id,
        content: r.content === undefined ? "" : joined(r.content),
      });
    const textOf = joined(m.content);
    if (uses.length > 0)
      out.push({
        role: "assistant",
        content: textOf,
        tool_calls: uses.map((u) => ({ id: u.id, type: "function", function: { name: u.name, arguments: u.input } })),
      });
    else if (results.length === 0 || textOf !== "") out.push({ role: m.role, content: textOf });
  });
  return out;
}

/** Anthropic's error `type` for an HTTP status. */
export function anthropicErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 503) return "overloaded_error";
  return status >= 500 ? "api_error" : "invalid_request_error";
}

/** The Anthropic-shaped body of an error (the message names the field; Anthropic's shape has no `param`). */
export function anthropicError(e: ApiError): { type: "error"; error: { type: string; message: string } } {
  const message = e.param !== null && !e.message.includes(e.param) ? `${e.param}: ${e.message}` : e.message;
  return { type: "error", error: { type: anthropicErrorType(e.status), message } };
}

/** The prompt ids of a conversation: system + messages through the chat template; a final assistant turn is a prefill. */
async function promptOf(engine: ServeEngine, body: CountTokensBody): Promise<number[]> {
  const turns = turnsOf(body);
  const system = body.system === undefined ? "" : joined(body.system);
  checkTextSize(
    engine,
    turns.reduce((n, m) => n + Buffer.byteLength(m.content), Buffer.byteLength(system)),
    "messages",
  );
  const prefill = turns.length > 1 && turns[turns.length - 1]!.role === "assistant" ? turns.pop()!.content : null;
  if (turns[turns.length - 1]!.role === "assistant")
    throw new ApiError(400, "invalid_request", "messages: the conversation has no user turn to answer", "messages");
  const chat = system === "" ? turns : [{ role: "system", content: system }, ...turns];
  let ids = await encodeChatOr400(
    engine,
    chat,
    body.tools === undefined || body.tools.length === 0 ? null : asFunctions(body.tools),
    "start the server with --chat-template FILE",
  );
  // The prefill continues the assistant turn the template opened.
  if (prefill !== null && prefill !== "") ids = [...ids, ...(await engine.encode(prefill, false))];
  checkIds(engine, ids, "messages");
  return ids;
}

/** `count_tokens`: the prompt's tokens as /v1/messages would run them. */
export async function countTokens(engine: ServeEngine, body: CountTokensBody): Promise<{ input_tokens: number }> {
  return { input_tokens: (await promptOf(engine, body)).length };
}

/**
 * The tool mode of a /v1/messages body: `any` or a named `tool` forces a tool call (the output constrained to
 * `{"name", "arguments"}` over the tools, answered as a tool_use block); `auto` (the default with tools) reads a
 * tool-call answer back; `none` or no tools is text.
 */
function toolsOf(body: MessagesBody): { output: ChatOutput; schema: object | null } {
  const tools = asFunctions(body.tools ?? []);
  const choice = body.tool_choice ?? { type: tools.length > 0 ? "auto" : "none" };
  if ((choice.type === "any" || choice.type === "tool") && tools.length === 0)
    throw new ApiError(400, "invalid_value", `tool_choice.type ${choice.type} needs tools`, "tool_choice");
  const names = new Set<string>();
  tools.forEach((t, i) => {
    if (names.has(t.function.name))
      throw new ApiError(
        400,
        "invalid_value",
        `tools[${i}].name "${t.function.name}" is used twice`,
        `tools[${i}].name`,
      );
    names.add(t.function.name);
    void new JsonGrammar(t.function.parameters, `tools[${i}].input_schema`);
  });
  if (choice.type === "tool") {
    const named = tools.filter((t) => t.function.name === choice.name);
    if (named.length === 0)
      throw new ApiError(
        400,
        "invalid_value",
        `tool_choice.name "${choice.name ?? ""}" is not in tools`,
        "tool_choice.name",
      );
    return { output: { mode: "tool", tools: named }, schema: toolCallSchema(named) };
  }
  if (choice.type === "any") return { output: { mode: "tool", tools }, schema: toolCallSchema(tools) };
  return { output: { mode: choice.type === "auto" && tools.length > 0 ? "auto" : "text", tools }, schema: null };
}

/** A planned /v1/messages request: its generation and how its answer is read back (text or a tool call). */
export interface PlannedMessage {
  readonly gen: GenerationRequest;
  readonly output: ChatOutput;
}

/** The generation a /v1/messages body asks for. */
export async function planMessages(engine: ServeEngine, body: MessagesBody): Promise<PlannedMessage> {
  const ids = await promptOf(engine, body);
  const maxTokens = maxTokensFor(engine, ids.length, body.max_tokens, body.max_tokens, "max_tokens", "messages");
  const format = body.output_config?.format ?? null;
  const tools = toolsOf(body);
  if (format !== null && tools.schema !== null)
    throw new ApiError(
      400,
      "invalid_value",
      "output_config.format cannot be combined with a forced tool_choice",
      "output_config.format",
    );
  let constraint: JsonConstraintSpec | null = null;
  if (format !== null || tools.schema !== null) {
    // Structured output or a forced tool call: one JSON document of the schema (grammar-constrained decoding).
    const schema = format?.schema ?? tools.schema!;
    const g = new JsonGrammar(schema, format !== null ? "output_config.format.schema" : "tools");
    const least = g.minLength(g.root);
    if (least > maxTokens)
      throw new ApiError(
        400,
        "invalid_value",
        `max_tokens is ${maxTokens}, but the shortest answer the schema allows can take ${least} tokens; raise max_tokens`,
        "max_tokens",
      );
    constraint = { schema };
  }
  const gen = generation(
    engine,
    {
      model: body.model,
      temperature: body.temperature ?? 1,
      top_p: body.top_p ?? 1,
      top_k: body.top_k ?? 0,
      stop: body.stop_sequences ?? [],
    },
    ids,
    maxTokens,
    0,
    null,
  );
  return { gen: { ...gen, constraint }, output: tools.output };
}

type StopReason = "end_turn" | "max_tokens" | "stop_sequence";

/**
 * Why the generation ended, Anthropic's way. The scheduler reports an EOS and a stop string alike as "stop"; the
 * runtime ends at the first stop string, so one occurring in the decoded tokens is the one that ended it.
 */
function stopOf(
  engine: ServeEngine,
  reason: "stop" | "length",
  ids: readonly number[],
  stops: readonly string[],
): { stop_reason: StopReason; stop_sequence: string | null } {
  if (reason === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  const all = engine.textOf(ids);
  let first = -1,
    which: string | null = null;
  for (const s of stops) {
    const i = all.indexOf(s);
    if (i >= 0 && (first < 0 || i < first)) [first, which] = [i, s];
  }
  return which === null
    ? { stop_reason: "end_turn", stop_sequence: null }
    : { stop_reason: "stop_sequence", stop_sequence: which };
}

/** Runs a /v1/messages request on the scheduler and answers whole or as Anthropic's event stream. */
export async function respondMessages(
  engine: ServeEngine,
  scheduler: ServeScheduler,
  model: string,
  body: MessagesBody,
  plan: PlannedMessage,
  reply: FastifyReply,
): Promise<void> {
  const { gen, output } = plan;
  /** The content blocks of a finished answer: a tool_use block when it is a tool call, else one text block. */
  const blocks = (text: string): { content: object[]; tool: boolean } => {
    const call = toolCallOf(output, text);
    return call === null
      ? { content: [{ type: "text", text }], tool: false }
      : {
          content: [
            {
              type: "tool_use",
              id: `toolu_${call.id.slice(5)}`,
              name: call.function.name,
              input: JSON.parse(call.function.arguments) as unknown,
            },
          ],
          tool: true,
        };
  };
  const [job] = scheduler.submit([gen]);
  const id = `msg_${randomUUID().replace(/-/g, "")}`;
  let done = false;
  reply.raw.on("close", () => {
    if (!done) job!.cancel();
  });
  if (reply.raw.socket === null || reply.raw.socket.destroyed) job!.cancel();
  const stops = body.stop_sequences ?? [];
  const usage = (out: number): Record<string, number> => ({
    input_tokens: gen.prompt.length,
    output_tokens: out,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  });
  const events = job!.events[Symbol.asyncIterator]();
  if (body.stream !== true) {
    let out = "";
    const ids: number[] = [];
    for (;;) {
      const r = await events.next();
      if (r.done === true) break;
      const e = r.value;
      if (e.kind === "token") {
        out += e.text;
        ids.push(e.id);
      } else if (e.kind === "error") {
        done = true;
        throw e.error;
      } else {
        done = true;
        out += e.text;
        const b = blocks(out);
        await reply.send({
          id,
          type: "message",
          role: "assistant",
          model,
          content: b.content,
          ...(b.tool ? { stop_reason: "tool_use", stop_sequence: null } : stopOf(engine, e.finishReason, ids, stops)),
          stop_details: null,
          usage: usage(e.completionTokens),
        });
        return;
      }
    }
    done = true;
    throw new ApiError(503, "server_shutting_down", "the generation was cancelled");
  }
  // As on the OpenAI side, the status goes out with the first event: a request failing in the queue gets its 503.
  const first = await events.next();
  const head: GenerationEvent | null = first.done === true ? null : first.value;
  if (head === null || head.kind === "error") {
    done = true;
    job!.cancel();
    throw head === null ? new ApiError(503, "server_shutting_down", "the generation was cancelled") : head.error;
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  const send = (type: string, data: object): void =>
    void res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send("message_start", {
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      stop_details: null,
      usage: usage(0),
    },
  });
  // A forced tool call is held back and sent as one tool_use block at the end; text streams as it comes.
  const forced = output.mode === "tool";
  if (!forced) send("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
  send("ping", {});
  const ids: number[] = [];
  let held = "";
  const delta = (t: string): void => {
    if (forced) held += t;
    else if (t !== "") send("content_block_delta", { index: 0, delta: { type: "text_delta", text: t } });
  };
  let e: GenerationEvent = head;
  for (;;) {
    if (res.destroyed) break;
    if (e.kind === "token") {
      ids.push(e.id);
      delta(e.text);
    } else if (e.kind === "done") {
      delta(e.text);
      let tool = false;
      if (forced) {
        const b = blocks(held);
        const block = b.content[0] as { type: string; input?: unknown };
        tool = b.tool;
        if (b.tool) {
          send("content_block_start", { index: 0, content_block: { ...block, input: {} } });
          send("content_block_delta", {
            index: 0,
            delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
          });
        } else {
          send("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
          if (held !== "") send("content_block_delta", { index: 0, delta: { type: "text_delta", text: held } });
        }
      }
      send("content_block_stop", { index: 0 });
      send("message_delta", {
        delta: {
          ...(tool ? { stop_reason: "tool_use", stop_sequence: null } : stopOf(engine, e.finishReason, ids, stops)),
          stop_details: null,
        },
        usage: { output_tokens: e.completionTokens },
      });
      send("message_stop", {});
      break;
    } else {
      send("error", anthropicError(e.error));
      break;
    }
    const r = await events.next();
    if (r.done === true) break;
    e = r.value;
  }
  done = true;
  if (!res.destroyed) res.end();
}
