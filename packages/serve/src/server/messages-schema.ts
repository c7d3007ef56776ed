// The bodies of Anthropic's `POST /v1/messages` and `POST /v1/messages/count_tokens` this server implements: their
// JSON schemas (which fastify validates against) and the TypeScript types of a validated body.

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

/** Text content: a string or text blocks. */
export type TextBlocks = string | { type: "text"; text: string }[];
/** A content block of a turn: text, an earlier tool call, or a tool's result. */
export type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content?: TextBlocks; is_error?: boolean };
/** A turn's content: a string or content blocks. */
export type Blocks = string | Block[];

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
