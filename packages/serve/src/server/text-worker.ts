// Tokenization and chat-template rendering off the event loop: one worker thread holds its own copy of the
// model's tokenizer and answers requests in order. Encoding a 1 MiB prompt takes seconds of CPU; on the main
// thread it froze /health and every stream for that long (issue #20).
import * as fs from "node:fs";
import { Worker } from "node:worker_threads";
import type { ChatMessage } from "@poot/models";
import { invariant } from "../errors.js";

/** What the worker is started with. */
export interface TextWorkerData {
  /** The model folder or .gguf file whose tokenizer to load. */
  readonly model: string;
  /** A Jinja template replacing the tokenizer's own. */
  readonly chatTemplate?: string;
}

/** A request to the worker. */
export type TextRequest = { readonly id: number } & TextOp;

/** What the worker is asked to do. */
export type TextOp =
  | { readonly op: "encode"; readonly text: string; readonly special: boolean }
  | { readonly op: "chat"; readonly messages: readonly ChatMessage[]; readonly tools?: readonly unknown[] | null };

type Reply =
  | { readonly id: number; readonly ids?: Int32Array | null; readonly error?: string }
  | { readonly ready: true };

/**
 * The worker script: next to this module once bundled (dist/text-worker.js); from the sources (tests), the
 * package's built copy.
 */
function workerScript(): URL {
  const candidates = [
    new URL("./text-worker.js", import.meta.url),
    new URL("../../dist/text-worker.js", import.meta.url),
  ];
  const found = candidates.find((u) => fs.existsSync(u));
  invariant(found !== undefined, "dist/text-worker.js is missing: build @poot/serve (pnpm build)");
  return found;
}

/** A worker thread that encodes text and chats with the model's tokenizer. */
export class TextWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<
    number,
    { resolve: (ids: number[] | null) => void; reject: (err: Error) => void }
  >();
  private next = 0;
  private failed: Error | null = null;

  /** @param data - the model whose tokenizer the worker loads, and a template override. */
  constructor(data: TextWorkerData) {
    // No inherited flags: a test runner's `--conditions source` would resolve @poot/models to TypeScript sources.
    this.worker = new Worker(workerScript(), { workerData: data, execArgv: [] });
    // The server's life decides the worker's: an idle worker never keeps the process alive.
    this.worker.unref();
    this.worker.on("message", (m: Reply) => {
      if ("ready" in m) return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m.ids === undefined || m.ids === null ? null : Array.from(m.ids));
    });
    const fail = (err: Error): void => {
      this.failed = err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    this.worker.on("error", (err) => fail(new Error(`the text worker failed: ${err.message}`)));
    this.worker.on("exit", (code) => fail(new Error(`the text worker exited (code ${code})`)));
  }

  private call(req: TextOp): Promise<number[] | null> {
    if (this.failed !== null) return Promise.reject(this.failed);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...req, id });
    });
  }

  /** The ids of `text` (`special`: BOS/EOS as the post-processor adds them). */
  async encode(text: string, special: boolean): Promise<number[]> {
    return (await this.call({ op: "encode", text, special }))!;
  }

  /** The ids of the rendered chat (tools given to the template), or null without a template; rejects with its error. */
  chat(messages: readonly ChatMessage[], tools?: readonly unknown[] | null): Promise<number[] | null> {
    return this.call({ op: "chat", messages, tools: tools ?? null });
  }

  /** Stops the thread; pending requests reject. */
  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
