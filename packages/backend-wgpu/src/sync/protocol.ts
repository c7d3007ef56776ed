// The messages between the synchronous executor (caller thread) and its device worker: device requests in order,
// answered (calls) through a MessagePort and signalled with Atomics on a shared word, or queued (posts).

import type { MessagePort } from "node:worker_threads";
import type { WgpuDeviceOptions } from "../device.js";
import type { DeviceRequest } from "../executor/protocol.js";
import type { NodeGpuOptions } from "../node.js";

/** What the worker is started with. */
export interface WorkerInit {
  /** Int32Array over a SharedArrayBuffer: word 0 is set to 1 when a reply is posted. */
  readonly signal: SharedArrayBuffer;
  /** The port replies come through. */
  readonly port: MessagePort;
}

/** Options of the device the worker opens. */
export interface OpenOptions {
  readonly gpu: NodeGpuOptions;
  readonly device: WgpuDeviceOptions;
}

/** A request: open the device (answered with its WgpuCaps), or a device request. */
export type Request = { readonly op: "open"; readonly options: OpenOptions } | DeviceRequest;

/** A request as sent: `answer` when the caller waits for the reply. */
export interface Message {
  readonly r: Request;
  readonly answer: boolean;
}

/** An error crossing the thread boundary (class name, stable code, message, context). */
export interface WireError {
  readonly name: string;
  readonly code?: string;
  readonly message: string;
  readonly context?: Record<string, unknown>;
}

/** A reply: a value or an error. */
export type Reply = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: WireError };
