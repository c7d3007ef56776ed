// Greedy decoding without the host between tokens (decision 2201): a CUDA graph holds `tokensPerLaunch` copies of
// a single-token decode step (its launches and copies, not its slot copies), each followed by `greedy_next`, which
// takes the argmax of the step's logits and writes the next step's token, position and KV slot on the device. The
// host queues graph launches ahead, and after each one an async copy of that launch's ids into pinned memory and an
// event; it reads ids a launch at a time, behind the device.

import type { DeviceProgram, GreedyLoop, GreedyLoopOptions, StateSet } from "@poot/executor";
import { greedyNext } from "@poot/kernelgen";
import type { CompiledKernel } from "../context.js";
import { CudaError } from "../errors.js";
import type { CudaGraph } from "../graph.js";
import type { LaunchParams } from "../launch.js";
import type { DeviceBuffer, PinnedBuffer } from "../memory.js";
import type { CudaEvent } from "../stream.js";
import type { CudaBuffer, CudaComputeDevice, CudaLaunch, CudaRecording } from "./device.js";

/** The slots a single-sequence paged decode step reads, exactly (a model with recurrent lanes does not qualify). */
const SLOTS = ["ids", "pos", "page_table", "slot_map"] as const;
/** Launches that may be queued past the oldest unread one. */
const IN_FLIGHT = 3;

/** The staged program a greedy loop replays (the CUDA executor's program). */
export type CudaLoopProgram = DeviceProgram<CudaBuffer, CompiledKernel, CudaLaunch, CudaRecording>;
type Program = CudaLoopProgram;

const kernels = new WeakMap<CudaComputeDevice, CompiledKernel>();

/**
 * The device greedy loop of `program` (a single-token paged decode program staged on `device`) over `state`, or
 * null when the program does not have exactly the slots `ids`, `pos`, `page_table`, `slot_map` (i32) and an f32
 * logits output of one row at a 16-byte-aligned offset.
 */
export function cudaGreedyLoop(
  device: CudaComputeDevice,
  program: Program,
  state: StateSet,
  options: GreedyLoopOptions,
  onLaunch: (dispatches: number) => void,
): CudaGreedyLoop | null {
  const { lowered, schema } = program;
  if (schema.slots.size !== SLOTS.length || !SLOTS.every((k) => schema.slots.get(k)?.dtype === "i32")) return null;
  if (schema.slots.get("ids")!.size !== 1 || schema.slots.get("pos")!.size !== 1) return null;
  const out = lowered.outputs.find((o) => o.name === options.logits);
  const spec = schema.outputs.get(options.logits);
  if (out === undefined || spec === undefined || spec.dtype !== "f32" || out.regions.length !== 1) return null;
  const region = out.regions[0]!;
  if (region.srcOffset % 16 !== 0 || region.bytes !== spec.size * 4) return null;
  const slotIds = new Map(lowered.buffers.filter((b) => b.kind === "slot").map((b) => [b.key!, b.id]));
  // A slot the compiled step never reads has no buffer: the loop writes all four, so it needs all four.
  if (!SLOTS.every((k) => slotIds.has(k))) return null;
  const slot = (k: (typeof SLOTS)[number]) => program.bufferOf(slotIds.get(k)!, state);
  return new CudaGreedyLoop(device, program, state, options, onLaunch, {
    logits: program.bufferOf(out.buffer, state).dev,
    offset: region.srcOffset / 4,
    vocab: spec.size,
    ids: slot("ids"),
    pos: slot("pos"),
    pageTable: slot("page_table"),
    slotMap: slot("slot_map"),
    pages: schema.slots.get("page_table")!.size,
  });
}

interface Buffers {
  readonly logits: DeviceBuffer;
  /** Element offset of the row in `logits`. */
  readonly offset: number;
  readonly vocab: number;
  readonly ids: CudaBuffer;
  readonly pos: CudaBuffer;
  readonly pageTable: CudaBuffer;
  readonly slotMap: CudaBuffer;
  /** Entries of the page table. */
  readonly pages: number;
}

/** See {@link cudaGreedyLoop}. */
export class CudaGreedyLoop implements GreedyLoop {
  readonly tokensPerLaunch: number;
  readonly maxInFlight = IN_FLIGHT;
  readonly #device: CudaComputeDevice;
  readonly #program: Program;
  readonly #state: StateSet;
  readonly #b: Buffers;
  readonly #onLaunch: (dispatches: number) => void;
  readonly #ringSize: number;
  readonly #loop: DeviceBuffer;
  readonly #loopHost: PinnedBuffer;
  readonly #ring: DeviceBuffer;
  readonly #ringHost: PinnedBuffer;
  readonly #events: CudaEvent[];
  readonly #params: LaunchParams;
  #graph: { readonly graph: CudaGraph; readonly step: CudaRecording } | null = null;
  #launched = 0;
  #began = false;
  #disposed = false;

  /** @internal Use {@link cudaGreedyLoop}. */
  constructor(
    device: CudaComputeDevice,
    program: Program,
    state: StateSet,
    options: GreedyLoopOptions,
    onLaunch: (dispatches: number) => void,
    buffers: Buffers,
  ) {
    const K = options.tokensPerLaunch;
    if (!Number.isSafeInteger(K) || K < 1)
      throw new CudaError("bad-argument", `tokensPerLaunch must be a positive integer, got ${K}`, { value: K });
    this.tokensPerLaunch = K;
    this.#device = device;
    this.#program = program;
    this.#state = state;
    this.#b = buffers;
    this.#onLaunch = onLaunch;
    this.#ringSize = K * (IN_FLIGHT + 1);
    const ctx = device.ctx;
    this.#loop = ctx.allocate(8);
    this.#loopHost = ctx.pinned(8);
    this.#ring = ctx.allocate(4 * this.#ringSize);
    this.#ringHost = ctx.pinned(4 * this.#ringSize);
    this.#events = Array.from({ length: IN_FLIGHT + 1 }, () => ctx.createEvent());
    let kernel = kernels.get(device);
    if (kernel === undefined) {
      kernel = ctx.compile(greedyNext);
      kernels.set(device, kernel);
    }
    this.#params = kernel.bind({
      buffers: {
        logits4: buffers.logits,
        logits: buffers.logits,
        ids: buffers.ids.dev,
        pos: buffers.pos.dev,
        slot_map: buffers.slotMap.dev,
        page_table: buffers.pageTable.dev,
        loop: this.#loop,
        ring: this.#ring,
      },
      uniforms: {
        V: buffers.vocab,
        offset: buffers.offset,
        page_size: options.pageSize,
        pages: buffers.pages,
        ring_size: this.#ringSize,
      },
    });
  }

  /** The graph of K steps for the program's current recording of the step (recaptured after new weights). */
  #graphFor(): CudaGraph {
    const step = this.#program.recordedStep(this.#state);
    if (this.#graph !== null && this.#graph.step === step) return this.#graph.graph;
    this.#graph?.graph.dispose();
    const kernel = kernels.get(this.#device)!;
    const graph = this.#device.ctx.capture(() => {
      for (let j = 0; j < this.tokensPerLaunch; j++) {
        this.#device.enqueue(step.ops, { slots: false });
        kernel.launch([1, 1, 1], this.#params);
      }
    });
    this.#graph = { graph, step };
    return graph;
  }

  begin(pos: number): void {
    this.#alive();
    // Earlier launches (of this loop or a previous run) have finished reading the pinned blocks rewritten here.
    this.#device.sync();
    this.#graphFor();
    const stream = this.#device.ctx.stream;
    for (const b of [this.#b.ids, this.#b.pos, this.#b.pageTable, this.#b.slotMap])
      b.pinned!.copyTo(b.dev, stream, b.bytes);
    this.#loopHost.write(Int32Array.of(pos, 0));
    this.#loopHost.copyTo(this.#loop, stream, 8);
    this.#launched = 0;
    this.#began = true;
  }

  launch(): void {
    this.#alive();
    if (!this.#began) throw new CudaError("bad-argument", "greedy loop launched before begin()");
    const graph = this.#graphFor();
    const stream = this.#device.ctx.stream;
    const K = this.tokensPerLaunch;
    const at = (this.#launched * K) % this.#ringSize;
    graph.launch(stream);
    this.#ringHost.copyFrom(this.#ring, stream, 4 * K, 4 * at, 4 * at);
    this.#events[this.#launched % this.#events.length]!.record(stream);
    this.#launched++;
    this.#device.graphLaunches++;
    this.#onLaunch(K * (this.#program.dispatchesPerStep() + 1));
  }

  read(index: number): Int32Array {
    this.#alive();
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.#launched || index < this.#launched - IN_FLIGHT - 1)
      throw new CudaError(
        "bad-argument",
        `greedy loop read of launch ${index}: ${this.#launched} queued, the last ${IN_FLIGHT + 1} readable`,
        { value: index },
      );
    const t0 = performance.now();
    this.#events[index % this.#events.length]!.synchronize();
    this.#device.waitMs += performance.now() - t0;
    const K = this.tokensPerLaunch;
    const at = (index * K) % this.#ringSize;
    const view = this.#ringHost.bytesView;
    return new Int32Array(view.buffer, view.byteOffset + 4 * at, K).slice();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#device.sync();
    this.#disposed = true;
    this.#graph?.graph.dispose();
    this.#params.dispose();
    for (const e of this.#events) e.dispose();
    this.#loop.dispose();
    this.#loopHost.dispose();
    this.#ring.dispose();
    this.#ringHost.dispose();
  }

  #alive(): void {
    if (this.#disposed) throw new CudaError("disposed", "greedy loop used after dispose()");
  }
}
