// JSON schemas of the request bodies, validated by fastify's Ajv (no type coercion): the OpenAI
// completions and chat completions subset this server implements, with each parameter's range.

const SEED_MAX = Number.MAX_SAFE_INTEGER;
const nullable = (schema: Record<string, unknown>): Record<string, unknown> => ({ anyOf: [schema, { type: "null" }] });

/** Parameters both endpoints share. Unknown fields are accepted and ignored, as OpenAI clients send extras. */
const common = {
  model: { type: "string", minLength: 1 },
  max_tokens: nullable({ type: "integer", minimum: 1 }),
  temperature: nullable({ type: "number", minimum: 0, maximum: 2 }),
  top_p: nullable({ type: "number", exclusiveMinimum: 0, maximum: 1 }),
  n: nullable({ type: "integer", minimum: 1, maximum: 16 }),
  stream: nullable({ type: "boolean" }),
  stream_options: nullable({ type: "object", properties: { include_usage: { type: "boolean" } } }),
  stop: nullable({
    anyOf: [
      { type: "string", minLength: 1 },
      { type: "array", maxItems: 4, items: { type: "string", minLength: 1 } },
    ],
  }),
  seed: nullable({ type: "integer", minimum: -SEED_MAX, maximum: SEED_MAX }),
  frequency_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
  presence_penalty: nullable({ type: "number", minimum: -2, maximum: 2 }),
  // OpenAI: token ids (as JSON keys) -> a bias in [-100, 100] added to the logit; at most 300 entries.
  logit_bias: nullable({
    type: "object",
    maxProperties: 300,
    propertyNames: { pattern: "^(0|[1-9][0-9]{0,9})$" },
    additionalProperties: { type: "number", minimum: -100, maximum: 100 },
  }),
  // vLLM / HF extensions: top_k (0 or -1 = off), min_p, repetition_penalty (1 = off).
  top_k: nullable({ type: "integer", minimum: -1 }),
  min_p: nullable({ type: "number", minimum: 0, maximum: 1 }),
  repetition_penalty: nullable({ type: "number", exclusiveMinimum: 0, maximum: 10 }),
  user: { type: "string" },
  ignore_eos: { type: "boolean" },
} as const;

/** POST /v1/completions. */
export const completionBody = {
  type: "object",
  required: ["model", "prompt"],
  properties: {
    ...common,
    prompt: {
      anyOf: [
        { type: "string" },
        { type: "array", minItems: 1, items: { type: "string" } },
        { type: "array", minItems: 1, items: { type: "integer", minimum: 0 } },
        { type: "array", minItems: 1, items: { type: "array", minItems: 1, items: { type: "integer", minimum: 0 } } },
      ],
    },
    logprobs: nullable({ type: "integer", minimum: 0, maximum: 5 }),
    echo: nullable({ type: "boolean" }),
    best_of: nullable({ type: "integer", minimum: 1, maximum: 1 }),
    suffix: { type: "null" },
  },
} as const;

const textPart = {
  type: "object",
  required: ["type", "text"],
  properties: { type: { const: "text" }, text: { type: "string" } },
} as const;

/** A function tool (OpenAI's shape). */
const tool = {
  type: "object",
  required: ["type", "function"],
  properties: {
    type: { const: "function" },
    function: {
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string", pattern: "^[a-zA-Z0-9_-]{1,64}$" },
        description: { type: "string" },
        parameters: { type: "object" },
        strict: nullable({ type: "boolean" }),
      },
    },
  },
} as const;

/** A tool call of an earlier assistant turn. */
const toolCall = {
  type: "object",
  required: ["id", "type", "function"],
  properties: {
    id: { type: "string" },
    type: { const: "function" },
    function: {
      type: "object",
      required: ["name", "arguments"],
      properties: { name: { type: "string" }, arguments: { type: "string" } },
    },
  },
} as const;

/** POST /v1/chat/completions. */
export const chatBody = {
  type: "object",
  required: ["model", "messages"],
  properties: {
    ...common,
    max_completion_tokens: nullable({ type: "integer", minimum: 1 }),
    messages: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        required: ["role"],
        properties: {
          role: { enum: ["system", "developer", "user", "assistant", "tool"] },
          content: nullable({ anyOf: [{ type: "string" }, { type: "array", items: textPart }] }),
          name: { type: "string" },
          tool_call_id: { type: "string" },
          tool_calls: nullable({ type: "array", items: toolCall }),
        },
      },
    },
    logprobs: nullable({ type: "boolean" }),
    top_logprobs: nullable({ type: "integer", minimum: 0, maximum: 20 }),
    // json_schema is required with type json_schema (checked when planning: a schema anyOf names the wrong field).
    response_format: nullable({
      type: "object",
      required: ["type"],
      properties: {
        type: { enum: ["text", "json_object", "json_schema"] },
        json_schema: {
          type: "object",
          required: ["name"],
          properties: {
            name: { type: "string", pattern: "^[a-zA-Z0-9_-]{1,64}$" },
            description: { type: "string" },
            schema: { type: "object" },
            strict: nullable({ type: "boolean" }),
          },
        },
      },
    }),
    tools: nullable({ type: "array", maxItems: 128, items: tool }),
    tool_choice: nullable({
      anyOf: [
        { enum: ["none", "auto", "required"] },
        {
          type: "object",
          required: ["type", "function"],
          properties: {
            type: { const: "function" },
            function: { type: "object", required: ["name"], properties: { name: { type: "string" } } },
          },
        },
      ],
    }),
    parallel_tool_calls: nullable({ type: "boolean" }),
  },
} as const;

/** Fields both bodies carry after validation. */
export interface CommonBody {
  model: string;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  n?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  stop?: string | string[] | null;
  seed?: number | null;
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  top_k?: number | null;
  min_p?: number | null;
  repetition_penalty?: number | null;
  ignore_eos?: boolean;
}

/** A validated completions body. */
export interface CompletionBody extends CommonBody {
  prompt: string | string[] | number[] | number[][];
  logprobs?: number | null;
  echo?: boolean | null;
}

/** A validated chat message. */
export interface ChatBodyMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content?: string | { type: "text"; text: string }[] | null;
  name?: string;
  tool_call_id?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[] | null;
}

/** A validated function tool. */
export interface ChatTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

/** A validated chat completions body. */
export interface ChatBody extends CommonBody {
  messages: ChatBodyMessage[];
  max_completion_tokens?: number | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  response_format?:
    | { type: "text" | "json_object" }
    | {
        type: "json_schema";
        json_schema: { name: string; description?: string; schema?: object; strict?: boolean | null };
      }
    | null;
  tools?: ChatTool[] | null;
  tool_choice?: "none" | "auto" | "required" | { type: "function"; function: { name: string } } | null;
  parallel_tool_calls?: boolean | null;
}

/** POST /tokenize (llama-server's shape). */
export const tokenizeBody = {
  type: "object",
  required: ["content"],
  properties: {
    model: { type: "string", minLength: 1 },
    content: { type: "string" },
    add_special: { type: "boolean" },
    with_pieces: { type: "boolean" },
  },
} as const;

/** A validated /tokenize body. */
export interface TokenizeBody {
  /** The model whose tokenizer to use (needed when the server serves several). */
  model?: string;
  content: string;
  add_special?: boolean;
  with_pieces?: boolean;
}

/** POST /detokenize (llama-server's shape). */
export const detokenizeBody = {
  type: "object",
  required: ["tokens"],
  properties: {
    model: { type: "string", minLength: 1 },
    tokens: { type: "array", items: { type: "integer", minimum: 0 } },
  },
} as const;

/** A validated /detokenize body. */
export interface DetokenizeBody {
  /** The model whose tokenizer to use (needed when the server serves several). */
  model?: string;
  tokens: number[];
}

/** POST /v1/embeddings (OpenAI's shape, with `normalize` and `pooling` extensions). */
export const embeddingsBody = {
  type: "object",
  required: ["model", "input"],
  properties: {
    model: { type: "string", minLength: 1 },
    input: {
      anyOf: [
        { type: "string", minLength: 1 },
        { type: "array", minItems: 1, maxItems: 2048, items: { type: "string", minLength: 1 } },
        { type: "array", minItems: 1, items: { type: "integer", minimum: 0 } },
        {
          type: "array",
          minItems: 1,
          maxItems: 2048,
          items: { type: "array", minItems: 1, items: { type: "integer", minimum: 0 } },
        },
      ],
    },
    encoding_format: { enum: ["float", "base64"] },
    dimensions: { type: "integer", minimum: 1 },
    user: { type: "string" },
    normalize: { type: "boolean" },
    pooling: { enum: ["mean", "last"] },
  },
} as const;

/** A validated /v1/embeddings body. */
export interface EmbeddingsBody {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: "float" | "base64";
  dimensions?: number;
  user?: string;
  normalize?: boolean;
  pooling?: "mean" | "last";
}

/** POST /admin/place (decision 1707): the new placement in `--place` syntax. */
export const placeBody = {
  type: "object",
  required: ["place"],
  additionalProperties: false,
  properties: { place: { type: "string", minLength: 1, maxLength: 4096 }, model: { type: "string", minLength: 1 } },
} as const;
