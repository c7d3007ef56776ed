// PTX modules: the driver's JIT with error and info log buffers (a rejection becomes a CudaError carrying
// the log), and an on-disk cache of linked cubins keyed by the PTX hash, the device arch and the driver.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CudaError } from "./errors.js";
import { check, native, resultName, type DriverApi, type Handle } from "./ffi.js";

// CUjit_option values (cuda.h) and CU_JIT_INPUT_PTX.
const JIT_INFO_LOG_BUFFER = 3;
const JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
const JIT_ERROR_LOG_BUFFER = 5;
const JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
const JIT_INPUT_PTX = 1;
const LOG_BYTES = 16384;
// CU_FUNC_ATTRIBUTE_NUM_REGS and CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES.
const FUNC_NUM_REGS = 4;
const FUNC_LOCAL_BYTES = 3;

/** Options of {@link loadPtx}. */
export interface LoadPtxOptions {
  /** Folder of cached cubins; without it every load JIT-compiles (nothing is written to disk). */
  readonly cacheDir?: string;
  /** The device arch (`sm_90`) and driver version, part of the cache key. */
  readonly arch: string;
  /** Driver version (cuDriverGetVersion), part of the cache key. */
  readonly driverVersion: number;
  /** Name for messages (the kernel or file). */
  readonly name?: string;
}

/** A loaded module and how it was obtained. */
export interface LoadedModule {
  /** The module. */
  readonly module: CudaModule;
  /** True when the cubin came from the disk cache (no JIT). */
  readonly cacheHit: boolean;
  /** Host milliseconds spent loading (JIT + load, or cache read + load). */
  readonly loadMs: number;
  /** The JIT's info log (empty on a cache hit). */
  readonly infoLog: string;
  /** The cache key (hex SHA-256). */
  readonly key: string;
}

/** A kernel entry point of a module with its resource use. */
export interface CudaFunction {
  /** The CUfunction handle. */
  readonly handle: Handle;
  /** Entry point name. */
  readonly name: string;
  /** Registers per thread. */
  readonly registers: number;
  /** Local (spill) memory per thread in bytes. */
  readonly localBytes: number;
}

/** A loaded CUmodule. */
export class CudaModule {
  private live = true;
  /** @internal */
  constructor(
    private readonly api: DriverApi,
    /** The CUmodule handle. */
    readonly handle: Handle,
  ) {}

  /** The entry point `name`; a CudaError("driver-call", CUDA_ERROR_NOT_FOUND) when the module has none. */
  getFunction(name: string): CudaFunction {
    if (!this.live) throw new CudaError("disposed", "module used after dispose()", { kernel: name });
    const out: Handle[] = [null];
    check(this.api, this.api.cuModuleGetFunction(out, this.handle, name), "cuModuleGetFunction", name);
    const attr = (a: number): number => {
      const v = [0];
      check(this.api, this.api.cuFuncGetAttribute(v, a, out[0]), "cuFuncGetAttribute", name);
      return v[0]!;
    };
    return { handle: out[0], name, registers: attr(FUNC_NUM_REGS), localBytes: attr(FUNC_LOCAL_BYTES) };
  }

  /** Unloads the module. */
  dispose(): void {
    if (!this.live) return;
    this.live = false;
    check(this.api, this.api.cuModuleUnload(this.handle), "cuModuleUnload");
  }
}

/** The cache key of a PTX text on one device: SHA-256 of the text, the arch and the driver version. */
export function ptxCacheKey(ptx: string, arch: string, driverVersion: number): string {
  return createHash("sha256")
    .update(ptx)
    .update("\0")
    .update(arch)
    .update("\0")
    .update(String(driverVersion))
    .digest("hex");
}

/** The JIT option table with an info and an error log buffer (native memory the driver writes into). */
class JitLogs {
  readonly options = native.alloc(4 * 4);
  readonly values = native.alloc(4 * 8);
  private readonly info = native.alloc(LOG_BYTES);
  private readonly error = native.alloc(LOG_BYTES);
  constructor() {
    const o = new DataView(native.view(this.options, 16).buffer);
    const v = new DataView(native.view(this.values, 32).buffer);
    [
      JIT_INFO_LOG_BUFFER,
      JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      JIT_ERROR_LOG_BUFFER,
      JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ].forEach((opt, i) => o.setInt32(i * 4, opt, true));
    v.setBigUint64(0, native.address(this.info), true);
    v.setBigUint64(8, BigInt(LOG_BYTES), true);
    v.setBigUint64(16, native.address(this.error), true);
    v.setBigUint64(24, BigInt(LOG_BYTES), true);
    native.view(this.info, LOG_BYTES)[0] = 0;
    native.view(this.error, LOG_BYTES)[0] = 0;
  }
  readonly count = 4;
  private text(p: Handle): string {
    const b = native.view(p, LOG_BYTES);
    const end = b.indexOf(0);
    return Buffer.from(b.subarray(0, end < 0 ? LOG_BYTES : end))
      .toString("utf8")
      .trim();
  }
  infoLog(): string {
    return this.text(this.info);
  }
  errorLog(): string {
    return this.text(this.error);
  }
  free(): void {
    for (const p of [this.options, this.values, this.info, this.error]) native.free(p);
  }
}

function jitError(api: DriverApi, result: number, call: string, logs: JitLogs, name: string | undefined): CudaError {
  const rn = resultName(api, result);
  const log = logs.errorLog();
  return new CudaError(
    "ptx-jit",
    `${call} rejected PTX${name ? ` of ${name}` : ""} with ${rn}${log ? `:\n${log}` : ""}`,
    {
      call,
      result,
      resultName: rn,
      log,
      ...(name !== undefined ? { kernel: name } : {}),
    },
  );
}

/** JIT-links PTX to a cubin with cuLink* (so the image can be cached); throws CudaError("ptx-jit") with the log. */
function linkCubin(api: DriverApi, ptx: Buffer, name: string | undefined): { cubin: Buffer; infoLog: string } {
  const logs = new JitLogs();
  const state: Handle[] = [null];
  try {
    check(api, api.cuLinkCreate(logs.count, logs.options, logs.values, state), "cuLinkCreate_v2");
    try {
      const added = api.cuLinkAddData(state[0], JIT_INPUT_PTX, ptx, ptx.length, name ?? "module.ptx", 0, null, null);
      if (added !== 0) throw jitError(api, added, "cuLinkAddData_v2", logs, name);
      const out: Handle[] = [null];
      const size: unknown[] = [0];
      const done = api.cuLinkComplete(state[0], out, size);
      if (done !== 0) throw jitError(api, done, "cuLinkComplete", logs, name);
      // The cubin belongs to the link state: copy it out before cuLinkDestroy.
      const cubin = Buffer.from(native.view(out[0], Number(size[0])));
      return { cubin, infoLog: logs.infoLog() };
    } finally {
      check(api, api.cuLinkDestroy(state[0]), "cuLinkDestroy");
    }
  } finally {
    logs.free();
  }
}

/**
 * Loads PTX text as a module. With `cacheDir`, the linked cubin is read from (or written to)
 * `<cacheDir>/<key>.cubin`, so a second process skips the JIT. Throws CudaError("ptx-jit") carrying the
 * JIT's error log when the driver rejects the PTX.
 */
export function loadPtx(api: DriverApi, ptx: string, options: LoadPtxOptions): LoadedModule {
  const t0 = performance.now();
  const key = ptxCacheKey(ptx, options.arch, options.driverVersion);
  const out: Handle[] = [null];
  const path = options.cacheDir !== undefined ? join(options.cacheDir, `${key}.cubin`) : undefined;
  if (path !== undefined && existsSync(path)) {
    const image = readFileSync(path);
    const r = api.cuModuleLoadData(out, image);
    // A stale or truncated cache entry is not fatal: fall through to the JIT and overwrite it.
    if (r === 0)
      return { module: new CudaModule(api, out[0]), cacheHit: true, loadMs: performance.now() - t0, infoLog: "", key };
  }
  const text = Buffer.from(`${ptx}\0`, "utf8");
  if (path === undefined) {
    const logs = new JitLogs();
    try {
      const r = api.cuModuleLoadDataEx(out, text, logs.count, logs.options, logs.values);
      if (r !== 0) throw jitError(api, r, "cuModuleLoadDataEx", logs, options.name);
      return {
        module: new CudaModule(api, out[0]),
        cacheHit: false,
        loadMs: performance.now() - t0,
        infoLog: logs.infoLog(),
        key,
      };
    } finally {
      logs.free();
    }
  }
  const { cubin, infoLog } = linkCubin(api, text, options.name);
  check(api, api.cuModuleLoadData(out, cubin), "cuModuleLoadData", options.name);
  mkdirSync(options.cacheDir!, { recursive: true });
  // Write then rename, so a concurrent reader never sees half a cubin.
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, cubin);
  renameSync(tmp, path);
  return { module: new CudaModule(api, out[0]), cacheHit: false, loadMs: performance.now() - t0, infoLog, key };
}
