// Turns C declarations copied from vulkan_core.h into koffi types, so each struct and function is written
// once, exactly as the Vulkan headers spell it, and the layout comes from the C rules koffi implements.

import koffi, { type TypeObject } from "koffi";
import { invariant } from "../errors.js";

/** Array-size macros that appear in the copied declarations. */
const SIZES: Record<string, number> = {
  VK_MAX_EXTENSION_NAME_SIZE: 256,
  VK_MAX_DESCRIPTION_SIZE: 256,
  VK_MAX_PHYSICAL_DEVICE_NAME_SIZE: 256,
  VK_UUID_SIZE: 16,
  VK_LUID_SIZE: 8,
  VK_MAX_MEMORY_TYPES: 32,
  VK_MAX_MEMORY_HEAPS: 16,
  VK_MAX_DRIVER_NAME_SIZE: 256,
  VK_MAX_DRIVER_INFO_SIZE: 256,
};

/** Vulkan handle types; all are 64-bit (dispatchable ones are pointers on 64-bit hosts), carried as bigint. */
export const HANDLE_TYPES = [
  "VkInstance",
  "VkPhysicalDevice",
  "VkDevice",
  "VkQueue",
  "VkCommandBuffer",
  "VkBuffer",
  "VkDeviceMemory",
  "VkShaderModule",
  "VkPipeline",
  "VkPipelineLayout",
  "VkPipelineCache",
  "VkDescriptorSetLayout",
  "VkDescriptorPool",
  "VkDescriptorSet",
  "VkCommandPool",
  "VkFence",
  "VkSemaphore",
  "VkQueryPool",
  "VkSampler",
  "VkDebugUtilsMessengerEXT",
] as const;

const PRIMITIVES: Record<string, string> = {
  void: "void",
  char: "char",
  float: "float",
  double: "double",
  int: "int",
  size_t: "size_t",
  uint8_t: "uint8_t",
  int32_t: "int32_t",
  uint32_t: "uint32_t",
  int64_t: "int64_t",
  uint64_t: "uint64_t",
  VkDeviceSize: "uint64_t",
  VkDeviceAddress: "uint64_t",
  VkBool32: "uint32_t",
  VkFlags: "uint32_t",
};

const declared = new Map<string, TypeObject | string>();

/** The koffi type name for a Vulkan base type, registering aliases (handles, flags, enums) on first use. */
function baseType(name: string): TypeObject | string {
  const known = declared.get(name);
  if (known !== undefined) return known;
  const prim = PRIMITIVES[name];
  if (prim !== undefined) return prim;
  let t: string;
  if ((HANDLE_TYPES as readonly string[]).includes(name)) t = "uint64_t";
  // Function pointers (PFN_*) are passed as raw addresses from koffi.register.
  else if (name.startsWith("PFN_")) t = "void *";
  // Flags and FlagBits are 32-bit VkFlags; every other Vk* name here is a C enum (int).
  else if (/^Vk\w*Flag(s|Bits)(EXT|KHR)?$/.test(name)) t = "uint32_t";
  else if (name.startsWith("Vk")) t = "int32_t";
  else throw new Error(`@poot/backend-vulkan internal error: unknown C type ${name}`);
  koffi.alias(name, t);
  declared.set(name, name);
  return name;
}

/** One member declaration (`const char* const* ppNames`, `uint32_t size[3]`) as a koffi member type. */
function memberType(decl: string): [string, TypeObject | string] {
  const m = /^(?:const\s+)?(\w+)((?:\s*\*\s*(?:const\s*)?)*)\s*(\w+)(?:\[(\w+)\])?$/.exec(decl.trim());
  invariant(m !== null, `cannot parse C member "${decl}"`);
  const [, base, stars, name, dim] = m as unknown as [string, string, string, string, string | undefined];
  const depth = (stars.match(/\*/g) ?? []).length;
  let t: TypeObject | string;
  if (depth === 0) t = baseType(base);
  // Strings and string lists marshal from JS strings; other pointers to structs/arrays marshal from JS values.
  else if (base === "char") t = depth === 1 ? "const char *" : "const char **";
  else if (base === "void") t = "void *";
  else if (depth === 1) t = koffi.pointer(baseType(base));
  else t = "void *";
  if (dim !== undefined) {
    const n = SIZES[dim] ?? Number(dim);
    invariant(Number.isInteger(n) && n > 0, `unknown array size ${dim}`);
    t = koffi.array(t, n, base === "char" ? "String" : "Array");
  }
  return [name, t];
}

/** Declares a struct from its C member list (as copied from vulkan_core.h) and returns its koffi type. */
export function cstruct(name: string, members: string): TypeObject {
  const def: Record<string, TypeObject | string> = {};
  for (const decl of members.split(";")) {
    if (decl.trim() === "") continue;
    const [field, t] = memberType(decl);
    def[field] = t;
  }
  const t = koffi.struct(name, def);
  declared.set(name, t);
  return t;
}

/** Registers the aliases a C function prototype mentions (enums, flags, handles), so koffi can parse it. */
export function declareNames(prototype: string): void {
  for (const [word] of prototype.matchAll(/\b(Vk\w+|PFN_\w+)\b/g)) {
    if (declared.has(word)) continue;
    const prim = PRIMITIVES[word];
    if (prim === undefined) baseType(word);
    else {
      koffi.alias(word, prim);
      declared.set(word, word);
    }
  }
}
