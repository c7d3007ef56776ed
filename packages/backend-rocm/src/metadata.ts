// The AMDGPU code object metadata: the msgpack map in the `AMDGPU` note of type NT_AMDGPU_METADATA (code object
// v3 and later), reduced to what launching a kernel needs: each kernel's kernarg segment and its arguments.

import { decode } from "@msgpack/msgpack";
import { readElfNotes } from "./elf.js";
import { RocmError } from "./errors.js";

/** Note type of the msgpack metadata in an `AMDGPU` note. */
export const NT_AMDGPU_METADATA = 32;

/** One kernel argument as the metadata describes it. */
export interface KernelArgMeta {
  /** Byte offset in the kernarg segment (`.offset`). */
  readonly offset: number;
  /** Size in bytes (`.size`). */
  readonly size: number;
  /** What the argument holds (`.value_kind`): `global_buffer`, `by_value`, `hidden_block_count_x`, ... */
  readonly valueKind: string;
  /** Source name (`.name`), when the compiler recorded one. */
  readonly name?: string;
  /** Address space of a pointer (`.address_space`), e.g. `global`. */
  readonly addressSpace?: string;
}

/** One kernel's launch metadata. */
export interface KernelMeta {
  /** Kernel name (`.name`). */
  readonly name: string;
  /** Kernel descriptor symbol (`.symbol`), e.g. `name.kd`. */
  readonly symbol: string;
  /** Bytes of the kernarg segment (`.kernarg_segment_size`). */
  readonly kernargSegmentSize: number;
  /** Alignment of the kernarg segment (`.kernarg_segment_align`). */
  readonly kernargSegmentAlign: number;
  /** Static LDS bytes (`.group_segment_fixed_size`). */
  readonly groupSegmentFixedSize: number;
  /** Scratch bytes per work-item (`.private_segment_fixed_size`). */
  readonly privateSegmentFixedSize: number;
  /** Wavefront size (`.wavefront_size`): 64 on gfx9, 32 or 64 on gfx10+. */
  readonly wavefrontSize: number;
  /** Largest work-group the kernel accepts (`.max_flat_workgroup_size`). */
  readonly maxFlatWorkgroupSize: number;
  /** Arguments in kernarg order (`.args`). */
  readonly args: readonly KernelArgMeta[];
}

/** A code object's metadata. */
export interface CodeObjectMetadata {
  /** `amdhsa.version` ([major, minor]): [1, 1] is code object v4, [1, 2] v5. */
  readonly version: readonly number[];
  /** `amdhsa.target`, e.g. `amdgcn-amd-amdhsa--gfx942`. */
  readonly target: string;
  /** Kernels, in the order the note lists them. */
  readonly kernels: readonly KernelMeta[];
}

const bad = (what: string): RocmError => new RocmError("bad_code_object", `code object metadata: ${what}`);

function field(m: Record<string, unknown>, key: string, where: string): number {
  const x = m[key];
  if (typeof x !== "number" || !Number.isInteger(x) || x < 0) throw bad(`${where} has no integer ${key}`);
  return x;
}

function text(m: Record<string, unknown>, key: string, where: string): string {
  const x = m[key];
  if (typeof x !== "string") throw bad(`${where} has no string ${key}`);
  return x;
}

const isMap = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/** Decodes the msgpack descriptor of an NT_AMDGPU_METADATA note. */
export function decodeMetadata(desc: Uint8Array): CodeObjectMetadata {
  let root: unknown;
  try {
    root = decode(desc);
  } catch (err) {
    throw bad(`the note is not valid msgpack (${(err as Error).message})`);
  }
  if (!isMap(root)) throw bad("the note is not a msgpack map");
  const version = root["amdhsa.version"];
  const kernels = root["amdhsa.kernels"];
  if (!Array.isArray(version) || !version.every((x) => typeof x === "number")) throw bad("no amdhsa.version");
  if (!Array.isArray(kernels)) throw bad("no amdhsa.kernels");
  const target = typeof root["amdhsa.target"] === "string" ? root["amdhsa.target"] : "";
  return {
    version: version as number[],
    target,
    kernels: kernels.map((k, i): KernelMeta => {
      if (!isMap(k)) throw bad(`kernel ${i} is not a map`);
      const where = `kernel ${typeof k[".name"] === "string" ? k[".name"] : i}`;
      const args = k[".args"] ?? [];
      if (!Array.isArray(args)) throw bad(`${where}: .args is not an array`);
      return {
        name: text(k, ".name", where),
        symbol: text(k, ".symbol", where),
        kernargSegmentSize: field(k, ".kernarg_segment_size", where),
        kernargSegmentAlign: field(k, ".kernarg_segment_align", where),
        groupSegmentFixedSize: field(k, ".group_segment_fixed_size", where),
        privateSegmentFixedSize: field(k, ".private_segment_fixed_size", where),
        wavefrontSize: field(k, ".wavefront_size", where),
        maxFlatWorkgroupSize: field(k, ".max_flat_workgroup_size", where),
        args: args.map((a, j): KernelArgMeta => {
          if (!isMap(a)) throw bad(`${where}: argument ${j} is not a map`);
          const w = `${where} argument ${j}`;
          return {
            offset: field(a, ".offset", w),
            size: field(a, ".size", w),
            valueKind: text(a, ".value_kind", w),
            ...(typeof a[".name"] === "string" ? { name: a[".name"] } : {}),
            ...(typeof a[".address_space"] === "string" ? { addressSpace: a[".address_space"] } : {}),
          };
        }),
      };
    }),
  };
}

/** The metadata of a code object (`.hsaco` bytes); `bad_code_object` when it has none or it is malformed. */
export function readCodeObjectMetadata(codeObject: Uint8Array): CodeObjectMetadata {
  const note = readElfNotes(codeObject).find((n) => n.name === "AMDGPU" && n.type === NT_AMDGPU_METADATA);
  if (note === undefined)
    throw bad("no AMDGPU metadata note (NT_AMDGPU_METADATA); code object v3 or later is required");
  return decodeMetadata(note.desc);
}
