// Anthropic's answer shapes for /v1/messages: its error bodies, the finished message (one text block or a tool_use
// block) and its server-sent events (message_start, content_block_start, ping, content_block_delta...,
// content_block_stop, message_delta, message_stop). Errors take Anthropic's shape, `{type: "error", error: {type, message}}`.
import { randomUUID } from "node:crypto";
import type { FastifyReply } from "fastify";
import { ApiError } from "../errors.js";
import type { ServeEngine } from "./engine.js";
import type { MessagesBody } from "./messages-schema.js";
import type { PlannedMessage } from "./messages.js";
import { toolCallOf } from "./responses.js";
import type { GenerationEvent, ServeScheduler } from "./scheduler-api.js";

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
