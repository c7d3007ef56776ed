// Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) over the same scheduler as the
// OpenAI endpoints: the system prompt and messages go through the model's chat template, a final assistant message
// is a prefill the answer continues. This file plans a request (prompt ids, tools, constraint); its body schema is
// messages-schema.ts and its answer (one text block whole, or Anthropic's server-sent events) messages-respond.ts.
import type { ChatMessage } from "@poot/models";
import { ApiError } from "../errors.js";
import type { JsonConstraintSpec, ServeEngine } from "./engine.js";
import { JsonGrammar } from "./json-grammar.js";
import { checkIds, checkTextSize, encodeChatOr400, generation, maxTokensFor } from "./requests.js";
import { toolCallSchema, type ChatOutput } from "./chat-request.js";
import type { ChatTool } from "./schemas.js";
import type { AnthropicTool, CountTokensBody, MessagesBody, TextBlocks, Blocks } from "./messages-schema.js";
import type { GenerationRequest } from "./scheduler-api.js";

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
