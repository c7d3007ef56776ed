// Streams and events: an ordered queue of device work (non-blocking with respect to the legacy stream)
// and events for ordering and GPU-side timing (cuEventElapsedTime, in milliseconds).

import { CudaError } from "./errors.js";
import { check, type DriverApi, type Handle } from "./ffi.js";

/** CU_STREAM_NON_BLOCKING: no implicit synchronization with the legacy default stream. */
const STREAM_NON_BLOCKING = 1;

/** A CUDA stream. */
export class CudaStream {
  private live = true;
  private constructor(
    private readonly api: DriverApi,
    /** The CUstream handle. */
    readonly handle: Handle,
  ) {}

  /** Creates a non-blocking stream on the current context. */
  static create(api: DriverApi): CudaStream {
    const out: Handle[] = [null];
    check(api, api.cuStreamCreate(out, STREAM_NON_BLOCKING), "cuStreamCreate");
    return new CudaStream(api, out[0]);
  }

  /** Waits until every operation queued on the stream has finished. */
  synchronize(): void {
    if (!this.live) throw new CudaError("disposed", "stream used after dispose()");
    check(this.api, this.api.cuStreamSynchronize(this.handle), "cuStreamSynchronize");
  }

  /** Destroys the stream (queued work still completes). */
  dispose(): void {
    if (!this.live) return;
    this.live = false;
    check(this.api, this.api.cuStreamDestroy(this.handle), "cuStreamDestroy_v2");
  }
}

/** A CUDA event with timing enabled. */
export class CudaEvent {
  private constructor(
    private readonly api: DriverApi,
    /** The CUevent handle. */
    readonly handle: Handle,
  ) {}

  /** Creates an event (CU_EVENT_DEFAULT: timing enabled). */
  static create(api: DriverApi): CudaEvent {
    const out: Handle[] = [null];
    check(api, api.cuEventCreate(out, 0), "cuEventCreate");
    return new CudaEvent(api, out[0]);
  }

  /** Records the event on `stream`. */
  record(stream: CudaStream): void {
    check(this.api, this.api.cuEventRecord(this.handle, stream.handle), "cuEventRecord");
  }

  /** Waits for the event. */
  synchronize(): void {
    check(this.api, this.api.cuEventSynchronize(this.handle), "cuEventSynchronize");
  }

  /** Milliseconds of GPU time from `start` to this event (both recorded and complete). */
  elapsedSince(start: CudaEvent): number {
    const ms = [0];
    check(this.api, this.api.cuEventElapsedTime(ms, start.handle, this.handle), "cuEventElapsedTime");
    return ms[0]!;
  }

  /** Destroys the event. */
  dispose(): void {
    check(this.api, this.api.cuEventDestroy(this.handle), "cuEventDestroy_v2");
  }
}
