// Anthropic's Messages API driven by the official `@anthropic-ai/sdk` client against the demo model on the eval
// backend. Oracle: transformers' greedy chat continuation in models/demo/reference.json (chat_greedy_ids / text).
import * as fs from "node:fs";
import * as path from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { Ajv } from "ajv";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEMO, startTestServer, startWorkerServer, type TestServer } from "./server-helpers.js";

const M = "demo";
/**
 * Sampling fields: the SDK (1.15) no longer lists temperature/top_p/top_k in its parameter types, but sends what it
 * is given and the server takes them (older clients and other tools still send them).
 */
const sampling = (o: { temperature?: number; top_p?: number; top_k?: number }): {} => o;
const KEY = "sk-ant-local";

/** The engine stepped on the HTTP thread, and on the engine worker thread `poot serve` uses (decision 2004). */
const MODES: [string, typeof startTestServer | typeof startWorkerServer][] = [
  ["in process", startTestServer],
  ["on the engine worker", startWorkerServer],
];

describe.each(MODES)("Anthropic Messages API through @anthropic-ai/sdk, %s", { timeout: 180_000 }, (_, start) => {
  let s: Pick<TestServer, "url" | "client" | "close">;
  let client: Anthropic;
  let ref: {
    chat_messages: { role: string; content: string }[];
    chat_ids: number[];
    chat_greedy_ids: number[];
    chat_greedy_text: string;
  };
  const decode = async (ids: number[]): Promise<string> =>
    (
      (await (
        await fetch(`${s.url}/detokenize`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": KEY },
          body: JSON.stringify({ tokens: ids }),
        })
      ).json()) as { content: string }
    ).content;

  beforeAll(async () => {
    s = await start(DEMO, { context: 64, maxBatch: 4, modelId: M, apiKey: KEY });
    client = new Anthropic({ baseURL: s.url, apiKey: KEY, maxRetries: 0, timeout: 120_000 });
    ref = JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as typeof ref;
  }, 180_000);
  afterAll(async () => {
    await s?.close();
  });

  const user = (): Anthropic.MessageParam[] => [{ role: "user", content: ref.chat_messages[0]!.content }];

  test("greedy message: transformers' chat continuation, end reasons and usage", async () => {
    const n = ref.chat_greedy_ids.length;
    const m = await client.messages.create({
      model: M,
      max_tokens: n,
      messages: user(),
      ...sampling({ temperature: 0 }),
    });
    expect(m.type).toBe("message");
    expect(m.role).toBe("assistant");
    expect(m.model).toBe(M);
    expect(m.id).toMatch(/^msg_/);
    expect(m.content).toEqual([{ type: "text", text: ref.chat_greedy_text }]);
    expect(m.stop_reason).toBe("max_tokens");
    expect(m.stop_sequence).toBeNull();
    expect(m.usage.input_tokens).toBe(ref.chat_ids.length);
    expect(m.usage.output_tokens).toBe(n);
    // A stop sequence ends the text before it and is reported.
    const st = await client.messages.create({
      model: M,
      max_tokens: n,
      messages: user(),
      ...sampling({ temperature: 0 }),
      stop_sequences: ["zzz", "future"],
    });
    const cut = ref.chat_greedy_text.indexOf("future");
    expect(st.content).toEqual([{ type: "text", text: ref.chat_greedy_text.slice(0, cut) }]);
    expect(st.stop_reason).toBe("stop_sequence");
    expect(st.stop_sequence).toBe("future");
    // count_tokens counts the prompt /v1/messages runs.
    const c = await client.messages.countTokens({ model: M, messages: user() });
    expect(c.input_tokens).toBe(ref.chat_ids.length);
  });

  test("a final assistant message is a prefill the answer continues (transformers' greedy after it)", async () => {
    const head = await decode(ref.chat_greedy_ids.slice(0, 2));
    const m = await client.messages.create({
      model: M,
      max_tokens: 10,
      ...sampling({ temperature: 0 }),
      messages: [...user(), { role: "assistant", content: head }],
    });
    expect(m.content[0]).toEqual({ type: "text", text: await decode(ref.chat_greedy_ids.slice(2, 12)) });
  });

  test("streaming: Anthropic's event sequence, text equal to the whole answer; the SDK's stream helper agrees", async () => {
    const n = ref.chat_greedy_ids.length;
    const raw = await client.messages.create({
      model: M,
      max_tokens: n,
      messages: user(),
      ...sampling({ temperature: 0 }),
      stream: true,
    });
    const types: string[] = [];
    let text = "";
    let stop: string | null = null;
    let out = -1;
    for await (const e of raw) {
      types.push(e.type);
      if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
      if (e.type === "message_delta") {
        stop = e.delta.stop_reason;
        out = e.usage.output_tokens;
      }
      if (e.type === "message_start") expect(e.message.usage.input_tokens).toBe(ref.chat_ids.length);
    }
    expect(types.slice(0, 2)).toEqual(["message_start", "content_block_start"]);
    expect(types.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(types.filter((t) => t === "content_block_delta").length).toBeGreaterThan(1);
    expect(text).toBe(ref.chat_greedy_text);
    expect(stop).toBe("max_tokens");
    expect(out).toBe(n);
    const helper = client.messages.stream({
      model: M,
      max_tokens: n,
      messages: user(),
      ...sampling({ temperature: 0 }),
    });
    const final = await helper.finalMessage();
    expect(final.content).toEqual([{ type: "text", text: ref.chat_greedy_text }]);
  });

  test("system prompt, sampling parameters and seeds of the same conversation", async () => {
    const sys = await client.messages.create({
      model: M,
      max_tokens: 4,
      system: "You are terse.",
      messages: user(),
      ...sampling({ temperature: 0 }),
    });
    const c = await client.messages.countTokens({ model: M, system: "You are terse.", messages: user() });
    expect(sys.usage.input_tokens).toBe(c.input_tokens);
    expect(c.input_tokens).toBeGreaterThan(ref.chat_ids.length);
    const sampled = await client.messages.create({
      model: M,
      max_tokens: 8,
      messages: user(),
      ...sampling({ temperature: 0.9, top_p: 0.95, top_k: 40 }),
    });
    expect(sampled.usage.output_tokens).toBeGreaterThan(0);
  });

  test("output_config.format json_schema: 3 sampled answers are JSON that validates", async () => {
    const schema = {
      type: "object",
      properties: { fortune: { type: "string", maxLength: 12 }, lucky: { type: "integer", minimum: 1, maximum: 9 } },
      required: ["fortune", "lucky"],
      additionalProperties: false,
    };
    const validate = new Ajv({ strict: false }).compile(schema);
    for (let i = 0; i < 3; i++) {
      const m = await client.messages.create({
        model: M,
        max_tokens: 40,
        messages: user(),
        output_config: { format: { type: "json_schema", schema } },
      });
      const t = (m.content[0] as Anthropic.TextBlock).text;
      expect(validate(JSON.parse(t)), t).toBe(true);
    }
    const err = await client.messages
      .create({
        model: M,
        max_tokens: 40,
        messages: user(),
        output_config: { format: { type: "json_schema", schema: { type: "string", pattern: "x" } } },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).message).toContain("output_config.format.schema");
  });

  test("tools: tool_choice any and a named tool give tool_use blocks whose input validates (whole and streamed)", async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: "add",
        description: "Adds two integers.",
        input_schema: {
          type: "object",
          properties: {
            a: { type: "integer", minimum: 0, maximum: 99 },
            b: { type: "integer", minimum: 0, maximum: 99 },
          },
          required: ["a", "b"],
          additionalProperties: false,
        },
      },
      {
        name: "echo",
        input_schema: { type: "object", properties: { s: { type: "string", maxLength: 6 } }, required: ["s"] },
      },
    ];
    const check = new Map(tools.map((t) => [t.name, new Ajv({ strict: false }).compile(t.input_schema)]));
    const ask: Anthropic.MessageParam[] = [{ role: "user", content: "Add 2 and 3." }];
    const m = await client.messages.create({
      model: M,
      max_tokens: 48,
      messages: ask,
      tools,
      tool_choice: { type: "any" },
    });
    expect(m.stop_reason).toBe("tool_use");
    const use = m.content[0] as Anthropic.ToolUseBlock;
    expect(use.type).toBe("tool_use");
    expect(use.id).toMatch(/^toolu_/);
    expect(check.get(use.name)!(use.input), JSON.stringify(use.input)).toBe(true);
    // Streamed through the SDK's helper, which assembles the input from input_json_delta events.
    const stream = client.messages.stream({
      model: M,
      max_tokens: 48,
      messages: ask,
      tools,
      tool_choice: { type: "tool", name: "add" },
    });
    const final = await stream.finalMessage();
    const named = final.content[0] as Anthropic.ToolUseBlock;
    expect(final.stop_reason).toBe("tool_use");
    expect(named.name).toBe("add");
    expect(check.get("add")!(named.input), JSON.stringify(named.input)).toBe(true);
    // The call and its result render as a conversation (auto: the demo model answers in text).
    const next = await client.messages.create({
      model: M,
      max_tokens: 4,
      tools,
      messages: [
        ...ask,
        { role: "assistant", content: [named] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: named.id, content: "5" }] },
      ],
    });
    expect(next.content[0]!.type).toBe("text");
    // Bad tool choices are Anthropic-shaped 400s naming the field.
    for (const [extra, field] of [
      [{ tools, tool_choice: { type: "tool", name: "nope" } }, "tool_choice.name"],
      [{ tool_choice: { type: "any" } }, "tool_choice"],
      [
        {
          tools: [{ name: "f", input_schema: { type: "object", properties: { x: { type: "string", pattern: "a" } } } }],
        },
        "tools[0].input_schema",
      ],
    ] as const) {
      const err = await client.messages
        .create({ model: M, max_tokens: 48, messages: ask, ...extra } as never)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as InstanceType<typeof Anthropic.BadRequestError>).message).toContain(field);
    }
  });

  test("x-api-key and Bearer both authenticate; a wrong key is Anthropic's 401", async () => {
    const bearer = new Anthropic({ baseURL: s.url, authToken: KEY, apiKey: null, maxRetries: 0 });
    const m = await bearer.messages.create({ model: M, max_tokens: 2, messages: user() });
    expect(m.usage.output_tokens).toBeGreaterThan(0);
    const wrong = new Anthropic({ baseURL: s.url, apiKey: "sk-wrong", maxRetries: 0 });
    const err = await wrong.messages.create({ model: M, max_tokens: 2, messages: user() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((err as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({
      type: "error",
      error: { type: "authentication_error" },
    });
  });

  test("bad input: 400 invalid_request_error in Anthropic's shape, one line naming the field", async () => {
    const cases: [object, string][] = [
      [{ model: M, messages: user() }, "max_tokens"],
      [{ model: M, max_tokens: 0, messages: user() }, "max_tokens"],
      [{ model: M, max_tokens: 4, messages: [] }, "messages"],
      [{ model: M, max_tokens: 4, messages: [{ role: "system", content: "x" }] }, "messages[0].role"],
      [
        { model: M, max_tokens: 4, messages: [{ role: "user", content: [{ type: "image", source: {} }] }] },
        "messages[0].content",
      ],
      [{ model: M, max_tokens: 4, messages: user(), temperature: 1.5 }, "temperature"],
      [{ model: M, max_tokens: 4, messages: user(), top_k: -1 }, "top_k"],
      [{ model: M, max_tokens: 4, messages: user(), stop_sequences: [""] }, "stop_sequences[0]"],
      [{ model: M, max_tokens: 4, messages: user(), system: 5 }, "system"],
      [{ model: M, max_tokens: 4000, messages: user() }, "max_tokens"],
      [{ model: M, max_tokens: 4, messages: [{ role: "assistant", content: "hi" }] }, "messages"],
    ];
    for (const [body, field] of cases) {
      const err = await client.messages.create(body as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(body)).toBeInstanceOf(Anthropic.BadRequestError);
      const e = err as InstanceType<typeof Anthropic.BadRequestError>;
      expect(e.status).toBe(400);
      const inner = e.error as { type: string; error: { type: string; message: string } };
      expect(inner.type).toBe("error");
      expect(inner.error.type).toBe("invalid_request_error");
      expect(inner.error.message).toContain(field);
      expect(inner.error.message).not.toContain("\n");
    }
    const nf = await client.messages
      .create({ model: "claude-x", max_tokens: 2, messages: user() })
      .catch((e: unknown) => e);
    expect(nf).toBeInstanceOf(Anthropic.NotFoundError);
    expect((nf as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      error: { type: "not_found_error" },
    });
  });
});
