// Lookup of storage formats by GGML type id and name, with names of the ids this package cannot decode.
// Unsupported ids still get their ggml name so errors can say "IQ2_XXS (16)" rather than a bare number.
import type { GGMLTypeName, QuantFormat } from "./format.js";
import { Q2_K, Q3_K, Q4_K, Q5_K, Q6_K } from "./kquants.js";
import { BF16, F16, F32, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 } from "./legacy.js";
import { IQ4_NL, IQ4_XS, MXFP4 } from "./nonlinear.js";

/** Every supported format, keyed by GGML type name. */
export const QUANT_FORMATS: Readonly<Record<GGMLTypeName, QuantFormat>> = {
  F32,
  F16,
  BF16,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
  MXFP4,
};

const byId = new Map<number, QuantFormat>(Object.values(QUANT_FORMATS).map((f) => [f.ggmlType, f]));

/** ggml's names of type ids (ggml.h `enum ggml_type`), used for messages about unsupported types. */
const GGML_TYPE_NAMES: Record<number, string> = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  6: "Q5_0",
  7: "Q5_1",
  8: "Q8_0",
  9: "Q8_1",
  10: "Q2_K",
  11: "Q3_K",
  12: "Q4_K",
  13: "Q5_K",
  14: "Q6_K",
  15: "Q8_K",
  16: "IQ2_XXS",
  17: "IQ2_XS",
  18: "IQ3_XXS",
  19: "IQ1_S",
  20: "IQ4_NL",
  21: "IQ3_S",
  22: "IQ2_S",
  23: "IQ4_XS",
  24: "I8",
  25: "I16",
  26: "I32",
  27: "I64",
  28: "F64",
  29: "IQ1_M",
  30: "BF16",
  34: "TQ1_0",
  35: "TQ2_0",
  39: "MXFP4",
};

/** The format of a GGML type id, or undefined when this package cannot decode it. */
export function formatById(id: number): QuantFormat | undefined {
  return byId.get(id);
}

/** ggml's name of a type id ("IQ2_XXS"), or `type<id>` for ids ggml does not define. */
export function ggmlTypeName(id: number): string {
  return GGML_TYPE_NAMES[id] ?? `type${id}`;
}
