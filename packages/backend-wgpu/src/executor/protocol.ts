// The WebGPU device's operations as messages (decision 1601): the generic staged program drives a proxy Device
// that names buffers, kernels, launches and recordings by number and sends these to where the GPUDevice lives.

import type { ByteRegion, LoweredBufferKind, LoweredKernel } from "@poot/executor";

/** One operation of a recording, by handle. */
export type WireOp =
  | { readonly kind: "launch"; readonly launch: number; readonly grid: readonly [number, number, number] }
  | { readonly kind: "copy"; readonly from: number; readonly to: number; readonly regions: readonly ByteRegion[] };

/** A device operation; `id` is the handle the proxy chose for what it makes. */
export type DeviceRequest =
  | {
      readonly op: "allocate";
      readonly id: number;
      readonly bytes: number;
      readonly kind: LoweredBufferKind | "snapshot";
      readonly label: string;
    }
  | { readonly op: "free"; readonly id: number }
  | { readonly op: "upload"; readonly id: number; readonly data: Uint8Array; readonly offset: number }
  | { readonly op: "download"; readonly id: number; readonly offset: number; readonly bytes: number }
  | { readonly op: "copy"; readonly from: number; readonly to: number; readonly regions: readonly ByteRegion[] }
  | { readonly op: "zero"; readonly id: number }
  | { readonly op: "load"; readonly id: number; readonly kernel: LoweredKernel }
  | {
      readonly op: "bind";
      readonly id: number;
      readonly kernel: number;
      readonly buffers: Readonly<Record<string, number>>;
      readonly uniforms: Readonly<Record<string, number>>;
    }
  | { readonly op: "unbind"; readonly id: number }
  | { readonly op: "record"; readonly id: number; readonly ops: readonly WireOp[]; readonly name: string }
  | { readonly op: "submit"; readonly id: number }
  | { readonly op: "release"; readonly id: number }
  | { readonly op: "sync" }
  | { readonly op: "dispose" };

/** Where device requests go: posted in order, or answered (`call` blocks; `request` resolves). */
export interface Transport {
  /** Queues a request that needs no answer; its error, if any, is thrown by the next answered request. */
  post(r: DeviceRequest): void;
  /** Sends a request and waits for its answer; absent where the thread may not block (a page's main thread). */
  readonly call?: (r: DeviceRequest) => unknown;
  /** Sends a request and resolves with its answer. */
  request(r: DeviceRequest): Promise<unknown>;
  /** Closes the channel (after `dispose`). */
  close(): void;
}
