// A chat request's parts that are not about tokens: its messages in the shapes the chat template takes (tool calls
// with parsed arguments), and how its answer is constrained (response_format, tools, tool_choice), each checked.
import type { ChatMessage } from "@poot/models";
import { ApiError } from "../errors.js";
import type { JsonConstraintSpec } from "./engine.js";
import { JsonGrammar } from "./json-grammar.js";
import type { ChatBody, ChatTool } from "./schemas.js";

/**
 * How a chat answer is constrained and read back: `text` free text; `json` one JSON document (response_format);
 * `tool` a forced tool call `{"name", "arguments"}` (tool_choice required or named) returned as `tool_calls`;
 * `auto` free text that becomes a tool call when it is exactly such a JSON object naming one of `tools`.
 */
export interface ChatOutput {
  readonly mode: "text" | "json" | "tool" | "auto";
  /** The request's tools (empty unless mode is tool or auto). */
  readonly tools: readonly ChatTool[];
}

/** The chat messages as the template takes them (HF's shapes: tool calls with parsed arguments). */
export function templateMessages(body: ChatBody): ChatMessage[] {
  return body.messages.map((m, i) => {
    const content =
      m.content === null || m.content === undefined
        ? null
        : typeof m.content === "string"
          ? m.content
          : m.content.map((part) => part.text).join("");
    const calls = m.tool_calls ?? [];
    if (content === null && !(m.role === "assistant" && calls.length > 0))
      throw new ApiError(400, "invalid_request", `messages[${i}].content is required`, `messages[${i}].content`);
    if (calls.length > 0 && m.role !== "assistant")
      throw new ApiError(
        400,
        "invalid_value",
        `messages[${i}].tool_calls is only for assistant messages`,
        `messages[${i}].tool_calls`,
      );
    if (m.role === "tool" && m.tool_call_id === undefined)
      throw new ApiError(
        400,
        "invalid_request",
        `messages[${i}].tool_call_id is required for a tool message`,
        `messages[${i}].tool_call_id`,
      );
    const out: ChatMessage = {
      // The templates know system/user/assistant; OpenAI's newer "developer" role is the system prompt.
      role: m.role === "developer" ? "system" : m.role,
      content: content ?? "",
      ...(m.tool_call_id === undefined ? {} : { tool_call_id: m.tool_call_id }),
      ...(m.name === undefined ? {} : { name: m.name }),
    };
    if (calls.length === 0) return out;
    return {
      ...out,
      tool_calls: calls.map((c, j) => {
        let args: unknown;
        try {
          args = JSON.parse(c.function.arguments);
        } catch {
          const param = `messages[${i}].tool_calls[${j}].function.arguments`;
          throw new ApiError(400, "invalid_value", `${param} is not JSON`, param);
        }
        return { id: c.id, type: "function", function: { name: c.function.name, arguments: args } };
      }),
    };
  });
}

/** The JSON schema of one tool call `{"name": ..., "arguments": ...}` over `tools`, their $defs hoisted to the root. */
export function toolCallSchema(tools: readonly ChatTool[]): object {
  const defs: Record<string, unknown> = {};
  const options = tools.map((t) => {
    const { $defs, definitions, ...params } = (t.function.parameters ?? { type: "object" }) as Record<string, unknown>;
    Object.assign(defs, $defs ?? {}, definitions ?? {});
    return {
      type: "object",
      properties: { name: { const: t.function.name }, arguments: params },
      required: ["name", "arguments"],
      additionalProperties: false,
    };
  });
  const one = options.length === 1 ? options[0]! : { anyOf: options };
  return Object.keys(defs).length === 0 ? one : { ...one, $defs: defs, definitions: defs };
}

/** The output mode and constraint of a chat request (response_format, tools, tool_choice), each checked. */
export function chatOutput(body: ChatBody): { output: ChatOutput; constraint: JsonConstraintSpec | null } {
  const tools = body.tools ?? [];
  const choice = body.tool_choice ?? (tools.length > 0 ? "auto" : "none");
  const rf = body.response_format ?? { type: "text" };
  if (typeof choice === "object" || choice === "required") {
    if (tools.length === 0)
      throw new ApiError(400, "invalid_value", "tool_choice asks for a tool call but tools is empty", "tool_choice");
    if (rf.type !== "text")
      throw new ApiError(
        400,
        "invalid_value",
        "response_format cannot be combined with a forced tool_choice",
        "response_format",
      );
  }
  const names = new Set<string>();
  tools.forEach((t, i) => {
    if (names.has(t.function.name))
      throw new ApiError(
        400,
        "invalid_value",
        `tools[${i}].function.name "${t.function.name}" is used twice`,
        `tools[${i}].function.name`,
      );
    names.add(t.function.name);
    // Checked on their own so an unsupported keyword names its tool.
    if (t.function.parameters !== undefined)
      void new JsonGrammar(t.function.parameters, `tools[${i}].function.parameters`);
  });
  if (typeof choice === "object") {
    const named = tools.filter((t) => t.function.name === choice.function.name);
    if (named.length === 0)
      throw new ApiError(
        400,
        "invalid_value",
        `tool_choice names "${choice.function.name}", which is not in tools`,
        "tool_choice.function.name",
      );
    return { output: { mode: "tool", tools: named }, constraint: { schema: toolCallSchema(named) } };
  }
  if (choice === "required") return { output: { mode: "tool", tools }, constraint: { schema: toolCallSchema(tools) } };
  if (rf.type === "json_object") return { output: { mode: "json", tools: [] }, constraint: { schema: null } };
  if (rf.type === "json_schema") {
    if (rf.json_schema === undefined)
      throw new ApiError(
        400,
        "invalid_request",
        "response_format.json_schema is required when response_format.type is json_schema",
        "response_format.json_schema",
      );
    return { output: { mode: "json", tools: [] }, constraint: { schema: rf.json_schema.schema ?? null } };
  }
  return { output: { mode: choice === "auto" && tools.length > 0 ? "auto" : "text", tools }, constraint: null };
}
