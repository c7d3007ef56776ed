// The SPIR-V word encodings shared by the module and function builders: literal strings and instructions.
// Kept apart from both so neither builder imports the other at run time.

import { invariant } from "../errors.js";

/** Encodes a string as SPIR-V literal words: UTF-8, NUL-terminated, zero-padded to a word boundary. */
export function stringWords(s: string): number[] {
  const bytes = new TextEncoder().encode(s);
  const words = new Array<number>(Math.floor(bytes.length / 4) + 1).fill(0);
  bytes.forEach((b, i) => {
    words[i >> 2] = (words[i >> 2]! | (b << ((i & 3) * 8))) >>> 0;
  });
  return words;
}

/** One encoded instruction: the first word packs word count (high 16 bits) and opcode (low 16 bits). */
export function instruction(opcode: number, operands: readonly number[]): number[] {
  const count = operands.length + 1;
  invariant(count < 0x10000, `SPIR-V instruction with ${count} words`);
  return [((count << 16) | opcode) >>> 0, ...operands.map((w) => w >>> 0)];
}
