// Byte access to packed data held as little-endian u32 words (the portable storage form: no target needs
// 8-bit storage). Packed buffers are padded to a multiple of 4 bytes.

import type { Arr, Val } from "@poot/kernel-dsl";

/** Byte `off` (u32 0..255) of a u32-word buffer, little-endian. */
export function byteAt(words: Arr<"u32">, off: Val<"u32">): Val<"u32"> {
  return words.at(off.shr(2)).shr(off.and(3).mul(8)).and(0xff);
}

/** The f16 stored little-endian at bytes off, off+1, as f32 (exact). */
export function f16At(
  words: Arr<"u32">,
  off: Val<"u32">,
  unpack: (fmt: "f16", v: Val<"u32">) => Val<"f32">,
): Val<"f32"> {
  return unpack("f16", byteAt(words, off).or(byteAt(words, off.add(1)).shl(8)));
}

/** Sign-extends a byte (0..255) to i32. */
export function i8From(byte: Val<"u32">): Val<"i32"> {
  return byte.shl(24).i32().shr(24);
}
