// CUDA graphs: record the work a callback enqueues on a stream (kernels, slot copies from pinned memory)
// once, instantiate it, and replay it per step with one cuGraphLaunch.

import { CudaError } from "./errors.js";
import { check, type DriverApi, type Handle } from "./ffi.js";
import type { CudaStream } from "./stream.js";

/** CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: only this thread's unsafe calls are refused during capture. */
const CAPTURE_THREAD_LOCAL = 1;

/** An instantiated CUDA graph. */
export class CudaGraph {
  private live = true;
  private constructor(
    private readonly api: DriverApi,
    private readonly graph: Handle,
    private readonly exec: Handle,
    /** Nodes recorded (kernels, copies). */
    readonly nodeCount: number,
  ) {}

  /**
   * Captures what `record` enqueues on `stream` and instantiates it. Nothing runs during capture; copies
   * from pinned host memory are recorded with their host address and read at each replay.
   */
  static capture(api: DriverApi, stream: CudaStream, record: () => void): CudaGraph {
    check(api, api.cuStreamBeginCapture(stream.handle, CAPTURE_THREAD_LOCAL), "cuStreamBeginCapture_v2");
    const graph: Handle[] = [null];
    try {
      record();
    } catch (e) {
      // End the capture so the stream is usable again, then report the callback's failure.
      api.cuStreamEndCapture(stream.handle, graph);
      if (graph[0] !== null) api.cuGraphDestroy(graph[0]);
      throw e;
    }
    check(api, api.cuStreamEndCapture(stream.handle, graph), "cuStreamEndCapture");
    const count = [0];
    check(api, api.cuGraphGetNodes(graph[0], null, count), "cuGraphGetNodes");
    const exec: Handle[] = [null];
    const r = api.cuGraphInstantiateWithFlags(exec, graph[0], 0);
    if (r !== 0) {
      api.cuGraphDestroy(graph[0]);
      check(api, r, "cuGraphInstantiateWithFlags");
    }
    return new CudaGraph(api, graph[0], exec[0], Number(count[0]));
  }

  /** Enqueues one replay on `stream`. */
  launch(stream: CudaStream): void {
    if (!this.live) throw new CudaError("disposed", "graph used after dispose()");
    check(this.api, this.api.cuGraphLaunch(this.exec, stream.handle), "cuGraphLaunch");
  }

  /** Destroys the executable graph and the graph. */
  dispose(): void {
    if (!this.live) return;
    this.live = false;
    check(this.api, this.api.cuGraphExecDestroy(this.exec), "cuGraphExecDestroy");
    check(this.api, this.api.cuGraphDestroy(this.graph), "cuGraphDestroy");
  }
}
