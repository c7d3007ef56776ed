// A staged program's own device memory and the operations its phases record: the buffers a LoweredProgram needs
// besides weights and State (slices of one arena where the device can slice), and each phase's copies and launches.

import type { Device, DeviceBuffer, DeviceOp } from "./device.js";
import { ExecutorError } from "./errors.js";
import type { LoweredProgram } from "./lowering/types.js";

/** The buffers a program owns, by lowered buffer id, and the arenas its slices lie in. */
export interface OwnedBuffers<B extends DeviceBuffer> {
  /** Slots, computed constants, prepared values, transients, scratch. */
  readonly owned: Map<number, B>;
  /** Buffers the owned slices lie in (the transients' arena, the shared scratch), with `Device.slice`. */
  readonly arenas: B[];
  /** Ids of owned buffers that are slices of an arena (neither freed nor counted on their own). */
  readonly sliced: Set<number>;
  /** The slot buffers by slot key. */
  readonly slots: Map<string, B>;
}

/** Allocates the buffers `lowered` owns on `d` (computed constants uploaded), named after program `name`. */
export function allocateOwned<B extends DeviceBuffer, K, L, R>(
  d: Device<B, K, L, R>,
  lowered: LoweredProgram,
  name: string,
): OwnedBuffers<B> {
  const owned = new Map<number, B>(),
    arenas: B[] = [],
    sliced = new Set<number>(),
    slots = new Map<string, B>();
  // Where the device can slice a buffer: transients at their arena offsets, every scratch area in one buffer.
  const arena = (bytes: number, kind: "transient" | "scratch"): B | null => {
    if (d.slice === undefined || bytes === 0) return null;
    const a = d.allocate(bytes, kind, `${name} ${kind} arena`);
    arenas.push(a);
    return a;
  };
  const transients = arena(lowered.arenaBytes, "transient");
  const scratch = arena(
    Math.max(0, ...lowered.buffers.filter((b) => b.kind === "scratch").map((b) => b.bytes)),
    "scratch",
  );
  for (const b of lowered.buffers) {
    if (b.kind === "weight" || b.kind === "state") continue;
    const within =
      b.kind === "transient" && b.offset !== undefined ? transients : b.kind === "scratch" ? scratch : null;
    if (within !== null) {
      owned.set(b.id, d.slice!(within, b.kind === "scratch" ? 0 : b.offset!, b.bytes));
      sliced.add(b.id);
      continue;
    }
    const buf = d.allocate(Math.max(4, b.bytes), b.kind, `${name} ${b.key ?? `v${b.id}`}`);
    if (b.kind === "computed") d.upload(buf, b.data!);
    if (b.kind === "slot") slots.set(b.key!, buf);
    owned.set(b.id, buf);
  }
  return { owned, arenas, sliced, slots };
}

/** What {@link phaseOps} reads of the program whose operations it lists. */
export interface PhaseContext<B extends DeviceBuffer> {
  /** The program's name and the executor's kind, for errors and labels. */
  readonly name: string;
  readonly kind: string;
  /** The slot buffers (copied in before a step). */
  readonly slots: Iterable<B>;
  /** Where snapshot buffers are kept (freed with the program). */
  readonly snapshots: B[];
  /** The device buffer of a lowered buffer id, against the step's State. */
  readonly buffer: (id: number) => B;
}

/** The operations of `phase`: snapshot copies and launches, then (steps) the State copies. */
export function phaseOps<B extends DeviceBuffer, K, L, R>(
  device: Device<B, K, L, R>,
  lowered: LoweredProgram,
  kernels: readonly K[],
  phase: "step" | "bind",
  at: PhaseContext<B>,
): { ops: DeviceOp<B, L>[]; launches: L[] } {
  const ops: DeviceOp<B, L>[] = [],
    launches: L[] = [];
  if (phase === "step") for (const b of at.slots) ops.push({ kind: "slot-in", buffer: b });
  for (const l of lowered.launches) {
    if (l.phase !== phase) continue;
    const buffers: Record<string, B> = {};
    for (const [arg, a] of Object.entries(l.args)) {
      let b = at.buffer(a.buffer);
      if (a.offset !== undefined) {
        if (device.slice === undefined)
          throw new ExecutorError("unsupported-program", `the ${at.kind} device cannot bind part of a buffer`, {
            program: at.name,
          });
        b = device.slice(b, a.offset, b.bytes - a.offset);
      }
      // An operand that is also the output is read from a copy taken before the kernel (no cross-block races).
      if (a.snapshot === true) {
        const snap = device.allocate(b.bytes, "snapshot", `${at.name} snapshot`);
        at.snapshots.push(snap);
        ops.push({
          kind: "copy",
          from: b,
          to: snap,
          regions: [{ srcOffset: 0, dstOffset: 0, bytes: b.bytes }],
          label: `snapshot ${arg}`,
        });
        b = snap;
      }
      buffers[arg] = b;
    }
    const launch = device.bind(kernels[l.kernel]!, buffers, l.uniforms);
    launches.push(launch);
    ops.push({
      kind: "launch",
      launch,
      grid: l.grid,
      label: `${l.op} (${lowered.kernels[l.kernel]!.name})`,
      plan: { op: l.op, request: l.request },
    });
  }
  if (phase === "step") {
    for (const c of lowered.stateCopies)
      ops.push({
        kind: "copy",
        from: at.buffer(c.from),
        to: at.buffer(c.to),
        regions: c.regions,
        label: `state ${c.key}`,
      });
  }
  return { ops, launches };
}
