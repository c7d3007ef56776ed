// NCCL through koffi (decision 2503): the communicators of one process driving every GPU (ncclCommInitAll), and the
// collective plan kind of a tensor-parallel step (graph-plan's CollectivePlan) issued as ncclAllReduce on each
// rank's stream inside one ncclGroupStart/End, which NCCL (>= 2.9) records into a stream capture like a kernel.
import type { CollectivePlan } from "@poot/graph-plan";
import koffi from "koffi";
import { CudaError } from "./errors.js";
import type { Handle } from "./ffi.js";

/**
 * The C prototypes this backend binds. Communicators (`ncclComm_t`) and buffers are passed as 64-bit integers (the
 * x86-64 ABI passes pointers and uint64 alike), so an array of communicators is read as addresses; streams as handles.
 */
export const NCCL_PROTOTYPES = {
  ncclGetVersion: "int ncclGetVersion(_Out_ int *version)",
  ncclGetErrorString: "const char *ncclGetErrorString(int result)",
  ncclCommInitAll: "int ncclCommInitAll(void *comms, int ndev, const int *devlist)",
  ncclCommDestroy: "int ncclCommDestroy(uint64_t comm)",
  ncclGroupStart: "int ncclGroupStart()",
  ncclGroupEnd: "int ncclGroupEnd()",
  ncclAllReduce:
    "int ncclAllReduce(uint64_t sendbuff, uint64_t recvbuff, size_t count, int datatype, int op, uint64_t comm, void *stream)",
} as const;

/** The bound library: one callable per prototype. */
export type NcclApi = { readonly [K in keyof typeof NCCL_PROTOTYPES]: (...args: unknown[]) => unknown };

/** The default library name. */
export const DEFAULT_NCCL_LIBRARY = "libnccl.so.2";

/** ncclDataType_t of the dtypes a collective carries (nccl.h). */
export const NCCL_DTYPES = { f32: 7, f16: 6, bf16: 9 } as const;
/** ncclRedOp_t ncclSum. */
const NCCL_SUM = 0;

/** Loads libnccl; a machine without NCCL gets a one-line `no-nccl` CudaError. */
export function loadNccl(libraryPath: string = DEFAULT_NCCL_LIBRARY): NcclApi {
  let lib: ReturnType<typeof koffi.load>;
  try {
    lib = koffi.load(libraryPath);
  } catch (e) {
    throw new CudaError("no-nccl", `no NCCL on this machine: cannot load ${libraryPath} (${(e as Error).message})`, {
      value: libraryPath,
    });
  }
  const api: Record<string, unknown> = {};
  for (const [name, proto] of Object.entries(NCCL_PROTOTYPES)) api[name] = lib.func(proto);
  return api as NcclApi;
}

function check(api: NcclApi, result: unknown, call: string): void {
  if (result === 0) return;
  throw new CudaError(
    "nccl-call",
    `${call} failed: ${String(api.ncclGetErrorString(result))} (ncclResult ${String(result)})`,
    {
      call,
      result: Number(result),
    },
  );
}

/** One rank's side of an all-reduce: its partial (`send`), where the sum goes (`recv`, may equal send), its stream. */
export interface RankBuffers {
  readonly send: bigint;
  readonly recv: bigint;
  readonly stream: Handle;
}

/** NCCL communicators over the GPUs of this process, rank r on `devices[r]`. */
export class NcclGroup {
  private live = true;

  private constructor(
    private readonly api: NcclApi,
    /** The communicator of each rank (its address). */
    readonly comms: readonly bigint[],
    /** The CUDA device ordinal of each rank. */
    readonly devices: readonly number[],
  ) {}

  /** Communicators for `devices` (one process driving them all: no unique id to exchange). */
  static initAll(api: NcclApi, devices: readonly number[]): NcclGroup {
    const out = new BigUint64Array(devices.length);
    check(api, api.ncclCommInitAll(out, devices.length, Int32Array.from(devices)), "ncclCommInitAll");
    return new NcclGroup(api, [...out], devices);
  }

  /**
   * Queues the all-reduce (sum) of `plan` on every rank's stream, one call per rank inside a group (required when one
   * thread drives several GPUs); under stream capture each rank's call becomes a node of its captured graph.
   */
  allReduce(plan: CollectivePlan, ranks: readonly RankBuffers[]): void {
    if (!this.live) throw new CudaError("disposed", "NCCL group used after dispose()");
    if (plan.kind !== "all-reduce")
      throw new CudaError("bad-argument", `collective #${plan.index} is an ${plan.kind}: only all-reduce is wired`);
    const dtype = NCCL_DTYPES[plan.dtype as keyof typeof NCCL_DTYPES];
    if (dtype === undefined)
      throw new CudaError(
        "bad-argument",
        `collective #${plan.index} carries ${String(plan.dtype)}: NCCL takes f32, f16, bf16`,
      );
    if (ranks.length !== this.comms.length)
      throw new CudaError("bad-argument", `${ranks.length} rank buffers for ${this.comms.length} communicators`);
    const count = plan.shape.reduce((a, b) => a * b, 1);
    check(this.api, this.api.ncclGroupStart(), "ncclGroupStart");
    try {
      ranks.forEach((r, i) =>
        check(
          this.api,
          this.api.ncclAllReduce(r.send, r.recv, count, dtype, NCCL_SUM, this.comms[i], r.stream),
          "ncclAllReduce",
        ),
      );
    } finally {
      check(this.api, this.api.ncclGroupEnd(), "ncclGroupEnd");
    }
  }

  /** Destroys the communicators. */
  dispose(): void {
    if (!this.live) return;
    this.live = false;
    for (const c of this.comms) check(this.api, this.api.ncclCommDestroy(c), "ncclCommDestroy");
  }
}
