// Weight reads for the pager (decision 1706): every paged-in block reads its tensors from the checkpoint again (no
// host cache: a budget below the weights must hold), and the next block's tensors can be read ahead, on a reader
// thread, while the current block runs. The executors run synchronously on the calling thread, so the bytes come
// back synchronously too: the reader thread reads each tensor with positioned reads into a fresh buffer, posts it
// (transferred, not copied) on a MessagePort and bumps a shared counter; the step's thread waits on the counter
// (Atomics.wait) and takes the message with receiveMessageOnPort. No event-loop turn is needed on either side.
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from "node:worker_threads";
import type { WeightSource } from "@poot/executor";
import type { HostData, ValueType } from "@poot/graph-ir";
import { type Checkpoint, type TensorInfo, hostDataOf, storedAs } from "@poot/models";
import { RuntimeError } from "../errors.js";

/** Counters of the weight reads of paged-in blocks. */
export interface WeightReadStats {
  /** Tensors read on the step's thread when a block needed them (not read ahead). */
  syncReads: number;
  /** Tensors read ahead by the reader thread. */
  prefetchedReads: number;
  /** Bytes read ahead. */
  prefetchedBytes: number;
  /** Milliseconds the step's thread spent reading tensors or waiting for tensors read ahead. */
  waitMs: number;
}

// The reader thread (CommonJS, run with `eval`): one positioned read per request, the buffer transferred back.
const READER = `
const { workerData } = require("node:worker_threads");
const fs = require("node:fs");
const ctrl = new Int32Array(workerData.ctrl);
const port = workerData.port;
const fds = new Map();
port.on("message", (r) => {
  try {
    let fd = fds.get(r.file);
    if (fd === undefined) fds.set(r.file, (fd = fs.openSync(r.file, "r")));
    const bytes = new Uint8Array(r.length);
    let done = 0;
    while (done < r.length) {
      const n = fs.readSync(fd, bytes, done, r.length - done, r.offset + done);
      if (n === 0) throw new Error("the file ended at byte " + (r.offset + done));
      done += n;
    }
    port.postMessage({ id: r.id, bytes }, [bytes.buffer]);
  } catch (e) {
    port.postMessage({ id: r.id, error: String(e && e.message) });
  }
  Atomics.add(ctrl, 0, 1);
  Atomics.notify(ctrl, 0);
});
port.on("close", () => { for (const fd of fds.values()) fs.closeSync(fd); });
`;

interface Pending {
  readonly id: number;
  readonly info: TensorInfo;
  bytes?: Uint8Array;
  error?: string;
  /** Forgotten before it arrived: dropped when it does. */
  dead?: boolean;
}

/** Reads a checkpoint's tensors for paged-in blocks, on the step's thread or ahead of use on a reader thread. */
export class WeightReader {
  /** Counters. */
  readonly stats: WeightReadStats = { syncReads: 0, prefetchedReads: 0, prefetchedBytes: 0, waitMs: 0 };
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  private ctrl: Int32Array | null = null;
  private nextId = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly byId = new Map<number, Pending>();

  /**
   * @param checkpoint - the model's checkpoint (tensor locations; synchronous reads of tensors not read ahead).
   * @param prefetch - whether {@link request} reads ahead (false: every tensor is read when a block needs it).
   */
  constructor(
    private readonly checkpoint: Checkpoint,
    readonly prefetch = true,
  ) {}

  /**
   * The weight source paged-in executors bind: a tensor read ahead if it was, else read now. Never cached. Its `into`
   * writes the stored bytes straight into a device's host-visible memory (a positioned read into it, or one copy of
   * the bytes read ahead) where they are the asked storage, so a page-in makes no host array.
   */
  readonly source: WeightSource = Object.assign(
    (key: string): HostData => this.timed(() => hostDataOf(this.checkpoint.info(key), this.bytes(key))),
    {
      into: (key: string, type: ValueType, dst: Uint8Array): boolean => {
        if (!storedAs(this.checkpoint.info(key), type, dst.byteLength)) return false;
        this.timed(() => {
          const p = this.take(key);
          if (p !== undefined) dst.set(this.wait(p));
          else this.checkpoint.readInto(key, dst);
        });
        return true;
      },
    },
  );

  /** The stored bytes of `key`: read ahead if they were, else read now. */
  private bytes(key: string): Uint8Array {
    const p = this.take(key);
    return p !== undefined ? this.wait(p) : this.checkpoint.readSync(key);
  }

  /** The read-ahead request of `key`, taken (undefined when there is none: a synchronous read is counted). */
  private take(key: string): Pending | undefined {
    const p = this.pending.get(key);
    if (p === undefined) this.stats.syncReads++;
    else this.pending.delete(key);
    return p;
  }

  private timed<T>(fn: () => T): T {
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      this.stats.waitMs += performance.now() - t0;
    }
  }

  /** Starts reading `keys` on the reader thread (no-op without prefetch, or for keys already requested). */
  request(keys: Iterable<string>): void {
    if (!this.prefetch) return;
    for (const key of keys) {
      if (this.pending.has(key)) continue;
      const info = this.checkpoint.info(key);
      const p: Pending = { id: this.nextId++, info };
      this.pending.set(key, p);
      this.byId.set(p.id, p);
      this.start().postMessage({ id: p.id, file: info.file, offset: info.byteOffset, length: info.byteLength });
      this.stats.prefetchedReads++;
      this.stats.prefetchedBytes += info.byteLength;
    }
  }

  /** Drops tensors read ahead that nothing took (a block paged out before it ran). */
  forget(keys: Iterable<string>): void {
    for (const key of keys) {
      const p = this.pending.get(key);
      if (p === undefined) continue;
      this.pending.delete(key);
      // Its message may still arrive: `drain` then drops it.
      if (p.bytes !== undefined || p.error !== undefined) this.byId.delete(p.id);
      else p.dead = true;
    }
  }

  /** Stops the reader thread. */
  dispose(): void {
    this.port?.close();
    void this.worker?.terminate();
    this.worker = null;
    this.port = null;
    this.pending.clear();
    this.byId.clear();
  }

  private start(): MessagePort {
    if (this.port !== null) return this.port;
    const { port1, port2 } = new MessageChannel();
    const ctrl = new SharedArrayBuffer(4);
    this.worker = new Worker(READER, { eval: true, workerData: { ctrl, port: port2 }, transferList: [port2] });
    this.worker.unref();
    this.ctrl = new Int32Array(ctrl);
    this.port = port1;
    return port1;
  }

  /** Takes every message the reader thread has posted. */
  private drain(): void {
    for (let m = receiveMessageOnPort(this.port!); m !== undefined; m = receiveMessageOnPort(this.port!)) {
      const msg = m.message as { id: number; bytes?: Uint8Array; error?: string };
      const p = this.byId.get(msg.id);
      if (p === undefined) continue;
      if (p.dead === true) {
        this.byId.delete(msg.id);
        continue;
      }
      if (msg.bytes !== undefined) p.bytes = msg.bytes;
      else p.error = msg.error ?? "unknown error";
    }
  }

  /** Blocks until `p` is read (Atomics.wait on the counter the reader bumps after each message). */
  private wait(p: Pending): Uint8Array {
    for (let timeouts = 0; p.bytes === undefined && p.error === undefined; ) {
      const seen = Atomics.load(this.ctrl!, 0);
      this.drain();
      if (p.bytes !== undefined || p.error !== undefined) break;
      if (Atomics.wait(this.ctrl!, 0, seen, 10_000) === "timed-out" && ++timeouts === 6)
        p.error = "the reader thread answered nothing for 60 s";
    }
    this.byId.delete(p.id);
    if (p.error !== undefined)
      throw new RuntimeError(
        "bad-config",
        `reading tensor ${p.info.name} from ${p.info.file} ahead of use: ${p.error}`,
      );
    return p.bytes!;
  }
}
