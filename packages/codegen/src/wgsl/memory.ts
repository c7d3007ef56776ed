// WGSL buffer access: how each kernel buffer is declared and read/written (plain, word-packed narrow types,
// or packed into the shared "small inputs" buffer when the kernel needs more bindings than the device has).

import { isVecType, lanesOf, type BufferParam, type ElemType, type ValueType } from "@poot/kernel-dsl";
import { wgslIdent } from "./names.js";

/** How one buffer is reached in WGSL. */
export type WgslBufferPlan =
  | {
      readonly how: "direct";
      readonly buf: BufferParam;
      readonly slot: number;
      readonly wgslElem: string;
      readonly atomicWords: boolean;
    }
  | { readonly how: "packed"; readonly buf: BufferParam; readonly offset: string };

/** Name of the packed-inputs buffer. */
export const PACKED = "packed_inputs";

/** Narrow storage types reached through 32-bit words in WGSL (f16 too unless `enable f16`). */
export function isWordPacked(elem: ElemType, nativeF16: boolean): boolean {
  return elem === "bf16" || elem === "u8" || elem === "i8" || (elem === "f16" && !nativeF16);
}

/** WGSL helper functions shared by all kernels that need them (bf16/f16 rounding, erf). */
export const WGSL_HELPERS: Record<string, string> = {
  // The bits of NaN, +inf and -inf: a private variable, because a constant expression may not be non-finite.
  nonfinite: "var<private> poot_nonfinite: vec3<u32> = vec3<u32>(0x7fc00000u, 0x7f800000u, 0xff800000u);",
  bf16_bits: [
    "fn bf16_bits(v: f32) -> u32 {",
    "  let b = bitcast<u32>(v);",
    "  // Round to nearest even on the dropped 16 bits; NaN keeps a quiet payload.",
    "  return select((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u, (b >> 16u) | 0x40u, v != v);",
    "}",
  ].join("\n"),
  f32_to_i32: [
    "fn f32_to_i32(x: f32) -> i32 {",
    "  // WGSL clamps out-of-range values to the largest f32 below 2^31; the IR saturates to i32::MAX and maps NaN to 0.",
    "  return select(select(i32(x), 2147483647i, x >= 2147483648.0f), 0i, x != x);",
    "}",
  ].join("\n"),
  f32_to_u32: [
    "fn f32_to_u32(x: f32) -> u32 {",
    "  return select(select(u32(x), 4294967295u, x >= 4294967296.0f), 0u, x != x);",
    "}",
  ].join("\n"),
  erf_f32: [
    "fn erf_f32(x: f32) -> f32 {",
    "  // Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), odd extension.",
    "  let t = 1.0 / (1.0 + 0.3275911 * abs(x));",
    "  let p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));",
    "  return sign(x) * (1.0 - p * exp(-x * x));",
    "}",
  ].join("\n"),
};

/** Word read for a buffer: atomic buffers are read with atomicLoad. */
function word(plan: WgslBufferPlan, w: string): string {
  if (plan.how === "packed") return `${PACKED}[${plan.offset} + ${w}]`;
  const n = wgslIdent(plan.buf.name);
  return plan.atomicWords ? `atomicLoad(&${n}[${w}])` : `${n}[${w}]`;
}

/** Body of the load helper `ld_<name>(i: u32) -> T`, or undefined when a plain index expression suffices. */
export function loadHelper(plan: WgslBufferPlan, nativeF16: boolean, type: ValueType): string | undefined {
  const elem = plan.buf.elem;
  const name = wgslIdent(plan.buf.name);
  if (plan.how === "direct" && !plan.atomicWords && !isWordPacked(elem, nativeF16)) return undefined;
  const sig = `fn ld_${name}(i: u32) -> ${type} {`;
  let body: string;
  switch (elem) {
    case "bf16":
      body = `return bitcast<f32>((${word(plan, "i >> 1u")} >> ((i & 1u) * 16u)) << 16u);`;
      break;
    case "f16":
      body =
        nativeF16 && plan.how === "direct"
          ? `return f32(${name}[i]);`
          : `return unpack2x16float(${word(plan, "i >> 1u")})[i & 1u];`;
      break;
    case "u8":
      body = `return (${word(plan, "i >> 2u")} >> ((i & 3u) * 8u)) & 0xffu;`;
      break;
    case "i8":
      body = `return bitcast<i32>(${word(plan, "i >> 2u")} << ((3u - (i & 3u)) * 8u)) >> 24u;`;
      break;
    case "f32":
      body = `return bitcast<f32>(${word(plan, "i")});`;
      break;
    case "u32":
      body = `return ${word(plan, "i")};`;
      break;
    case "i32":
      body = `return bitcast<i32>(${word(plan, "i")});`;
      break;
    default: {
      // Vectors from words: lanes consecutive, 4 bytes each.
      const n = lanesOf(elem);
      const parts = Array.from({ length: n }, (_, l) => word(plan, `i * ${n}u + ${l}u`));
      const conv =
        type.startsWith("vec2<f32") || type.startsWith("vec4<f32")
          ? "bitcast<f32>"
          : type.includes("i32")
            ? "bitcast<i32>"
            : "";
      body = `return ${type}(${parts.map((p) => `${conv}(${p})`).join(", ")});`;
    }
  }
  return `${sig}\n  ${body}\n}`;
}

/** Body of the store helper `st_<name>(i: u32, v: T)`, or undefined for a plain assignment. */
export function storeHelper(plan: WgslBufferPlan, nativeF16: boolean, type: ValueType): string | undefined {
  if (plan.how !== "direct") return undefined;
  const elem = plan.buf.elem;
  const name = wgslIdent(plan.buf.name);
  if (!isWordPacked(elem, nativeF16)) return undefined;
  const bits =
    elem === "bf16"
      ? "bf16_bits(v)"
      : elem === "f16"
        ? "pack2x16float(vec2<f32>(v, 0.0)) & 0xffffu"
        : elem === "u8"
          ? "v & 0xffu"
          : "bitcast<u32>(v) & 0xffu";
  const wide = elem === "bf16" || elem === "f16";
  const w = wide ? "i >> 1u" : "i >> 2u";
  const shift = wide ? "(i & 1u) * 16u" : "(i & 3u) * 8u";
  const mask = wide ? "0xffffu" : "0xffu";
  // Neighbouring elements share a word with other threads: clear then set only this element's bits.
  return [
    `fn st_${name}(i: u32, v: ${type}) {`,
    `  let s = ${shift};`,
    `  atomicAnd(&${name}[${w}], ~(${mask} << s));`,
    `  atomicOr(&${name}[${w}], (${bits}) << s);`,
    "}",
  ].join("\n");
}

/** WGSL element type of a directly bound buffer. */
export function directElem(
  buf: BufferParam,
  nativeF16: boolean,
  storedNarrow: boolean,
): { wgslElem: string; atomicWords: boolean } {
  if (buf.atomic)
    return { wgslElem: "atomic<u32>".replace("u32", buf.elem === "i32" ? "i32" : "u32"), atomicWords: false };
  if (isWordPacked(buf.elem, nativeF16))
    return storedNarrow ? { wgslElem: "atomic<u32>", atomicWords: true } : { wgslElem: "u32", atomicWords: false };
  return { wgslElem: isVecType(buf.elem) || buf.elem !== "f16" ? buf.elem : "f16", atomicWords: false };
}
