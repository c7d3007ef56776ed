// The Vulkan bindings: libvulkan.so.1 loaded through koffi, every struct and function declared once from
// the header text in src/generated/, and `check` turning a failed VkResult into a typed VulkanError.

import koffi, { type LibraryHandle, type TypeObject } from "koffi";
import { VulkanError } from "../errors.js";
import { VK_FUNCTIONS } from "../generated/vk-functions.js";
import { VK_STRUCTS } from "../generated/vk-structs.js";
import { cstruct, declareNames } from "./cstruct.js";

/** A bound Vulkan function (koffi marshals plain JS values, typed arrays and bigint pointers). */
// koffi functions are untyped at this boundary; each call site passes the header's argument list.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type VkFunction = (...args: any[]) => any;

/** The loaded library: functions by name and struct types by name. */
export interface VkLib {
  /** Core functions exported by the loader, plus instance-level extension functions resolved later. */
  readonly fn: Readonly<Record<string, VkFunction>>;
  /** Struct types by C name (for sizes, koffi.alloc/encode/decode of pNext chains). */
  readonly struct: Readonly<Record<string, TypeObject>>;
  /** Resolves an instance-level extension function through vkGetInstanceProcAddr. */
  instanceFunction(instance: bigint, name: string): VkFunction;
}

/** Structs passed only as null pointers here; declaring their layouts would add nothing. */
const NULL_ONLY = ["VkAllocationCallbacks", "VkCopyDescriptorSet", "VkBufferMemoryBarrier", "VkImageMemoryBarrier"];

/** Adapts a header prototype for koffi: null-only struct pointers become void*, outputs become in/out. */
function adapt(proto: string): string {
  let p = proto.replace(/^PFN_vkVoidFunction /, "void * ");
  for (const s of NULL_ONLY) p = p.replace(new RegExp(`const ${s}\\*`, "g"), "void *");
  // Non-const pointer parameters are outputs (handles, counts, property structs): copy back after the call.
  return p.replace(/([(,]\s*)(?!const\b)(\w+\*+ \w+)/g, (_m, pre: string, decl: string) =>
    decl.startsWith("void*") ? `${pre}${decl}` : `${pre}_Inout_ ${decl}`,
  );
}

let loaded: VkLib | undefined;
let loadError: string | undefined;

/** The names of the prototypes of instance-level extension functions (resolved per instance). */
const EXTENSION_FUNCTIONS = new Set(["vkCreateDebugUtilsMessengerEXT", "vkDestroyDebugUtilsMessengerEXT"]);

/**
 * Loads libvulkan.so.1 (or `path`) once per process. Throws `loader-missing` when the loader is absent.
 * The ICD the loader picks follows the loader's own rules (e.g. VK_DRIVER_FILES set by the application).
 */
export function loadVulkan(path = "libvulkan.so.1"): VkLib {
  if (loaded !== undefined) return loaded;
  if (loadError !== undefined) throw new VulkanError("loader-missing", loadError, { name: path });
  let lib: LibraryHandle;
  try {
    lib = koffi.load(path);
  } catch (e) {
    loadError = `cannot load the Vulkan loader ${path}: ${(e as Error).message}`;
    throw new VulkanError("loader-missing", loadError, { name: path });
  }
  const struct: Record<string, TypeObject> = {};
  for (const [name, members] of VK_STRUCTS) struct[name] = cstruct(name, members);
  const fn: Record<string, VkFunction> = {};
  const protos = new Map<string, TypeObject>();
  for (const proto of VK_FUNCTIONS) {
    const adapted = adapt(proto);
    declareNames(adapted);
    const name = /\b(vk\w+)\(/.exec(adapted)![1]!;
    if (EXTENSION_FUNCTIONS.has(name)) protos.set(name, koffi.proto(adapted.replace(name, `PFN_${name}`)));
    else fn[name] = lib.func(adapted);
  }
  loaded = {
    fn,
    struct,
    instanceFunction(instance, name) {
      const ptr: unknown = fn.vkGetInstanceProcAddr!(instance, name);
      const proto = protos.get(name);
      if (proto === undefined || ptr === null || ptr === 0n) {
        throw new VulkanError("missing-layer", `the instance does not provide ${name} (is its extension enabled?)`, {
          call: "vkGetInstanceProcAddr",
          name,
        });
      }
      return koffi.decode(ptr, proto) as VkFunction;
    },
  };
  return loaded;
}

/** Names of VkResult values, for messages. */
const RESULT_NAMES: Record<number, string> = {
  0: "VK_SUCCESS",
  1: "VK_NOT_READY",
  2: "VK_TIMEOUT",
  3: "VK_EVENT_SET",
  4: "VK_EVENT_RESET",
  5: "VK_INCOMPLETE",
  [-1]: "VK_ERROR_OUT_OF_HOST_MEMORY",
  [-2]: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
  [-3]: "VK_ERROR_INITIALIZATION_FAILED",
  [-4]: "VK_ERROR_DEVICE_LOST",
  [-5]: "VK_ERROR_MEMORY_MAP_FAILED",
  [-6]: "VK_ERROR_LAYER_NOT_PRESENT",
  [-7]: "VK_ERROR_EXTENSION_NOT_PRESENT",
  [-8]: "VK_ERROR_FEATURE_NOT_PRESENT",
  [-9]: "VK_ERROR_INCOMPATIBLE_DRIVER",
  [-10]: "VK_ERROR_TOO_MANY_OBJECTS",
  [-11]: "VK_ERROR_FORMAT_NOT_SUPPORTED",
  [-12]: "VK_ERROR_FRAGMENTED_POOL",
  [-13]: "VK_ERROR_UNKNOWN",
  [-1000069000]: "VK_ERROR_OUT_OF_POOL_MEMORY",
  [-1000072003]: "VK_ERROR_INVALID_EXTERNAL_HANDLE",
  [-1000161000]: "VK_ERROR_FRAGMENTATION",
  [-1000011001]: "VK_ERROR_VALIDATION_FAILED_EXT",
  [-1000012000]: "VK_ERROR_INVALID_SHADER_NV",
};

/** The name of a VkResult value. */
export function resultName(result: number): string {
  return RESULT_NAMES[result] ?? `VkResult(${result})`;
}

/** Throws `vk-result` naming the call and the VkResult when `result` is an error (negative); returns it otherwise. */
export function check(result: number, call: string, what = ""): number {
  if (result < 0) {
    const name = resultName(result);
    // Device loss and memory exhaustion get codes of their own: callers handle them, not just report them.
    const code = result === -4 ? "device-lost" : result === -1 || result === -2 ? "out-of-memory" : "vk-result";
    throw new VulkanError(code, `${name}${what === "" ? "" : ` (${what})`}`, { call, result: name, code: result });
  }
  return result;
}

/** Calls a Vulkan function whose last argument is a handle output; returns the handle (checked). */
export function createHandle(f: VkFunction, call: string, ...args: unknown[]): bigint {
  const out = new BigUint64Array(1);
  check(f(...args, out) as number, call);
  return out[0]!;
}

/** Packs a Vulkan API version number. */
export function apiVersion(major: number, minor: number, patch = 0): number {
  return ((major << 22) | (minor << 12) | patch) >>> 0;
}
