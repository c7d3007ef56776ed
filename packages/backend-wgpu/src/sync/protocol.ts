// The messages between the synchronous executor (caller thread) and its device worker: one request at a
// time, answered through a MessagePort and signalled with Atomics on a shared word.

import type { MessagePort } from "node:worker_threads";
import type { NodeGpuOptions } from "../node.js";
import type { WgpuDeviceOptions } from "../device.js";
import type { WgpuExecutorOptions } from "../executor/executor.js";

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
  readonly executor: WgpuExecutorOptions;
}

/** A request; `pid`/`sid` name programs and StateSets the worker holds. */
export type Request =
  | { readonly op: "open"; readonly options: OpenOptions }
  | { readonly op: "bindWeights" }
  | { readonly op: "weights"; readonly entries: readonly (readonly [string, ArrayLike<number>])[] }
  | { readonly op: "stage"; readonly graph: unknown; readonly name: string }
  | { readonly op: "createState"; readonly pid: number }
  | { readonly op: "writeSlot"; readonly pid: number; readonly key: string; readonly data: ArrayLike<number> }
  | { readonly op: "run"; readonly pid: number; readonly sid: number | null }
  | { readonly op: "readOutput"; readonly pid: number; readonly name: string }
  | { readonly op: "capture"; readonly pid: number; readonly sid: number | null }
  | { readonly op: "replay"; readonly pid: number }
  | { readonly op: "disposeProgram"; readonly pid: number }
  | { readonly op: "stateRead"; readonly sid: number; readonly key: string }
  | { readonly op: "stateWrite"; readonly sid: number; readonly key: string; readonly data: ArrayLike<number> }
  | {
      readonly op: "copyLanes";
      readonly sid: number;
      readonly from: number;
      readonly fromLane: number;
      readonly toLane: number;
      readonly count: number;
    }
  | { readonly op: "zero"; readonly sid: number }
  | { readonly op: "disposeState"; readonly sid: number }
  | { readonly op: "deviceBytes" }
  | { readonly op: "dispatchesSubmitted" }
  | { readonly op: "dispose" };

/** An error crossing the thread boundary (class name, stable code, message, context). */
export interface WireError {
  readonly name: string;
  readonly code?: string;
  readonly message: string;
  readonly context?: Record<string, unknown>;
}

/** A reply: a value or an error. */
export type Reply = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: WireError };
