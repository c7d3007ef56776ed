// The .kir.json form: a versioned, canonical (sorted keys, 2-space indent) and lossless encoding of a Kernel.
// Non-finite and negative-zero f32 literals, which JSON cannot hold, are written as strings.

import { KirJsonError } from "./errors.js";
import type { Kernel } from "./ir.js";
import { assertValidKernel } from "./validate.js";

/** The `format` tag of a .kir.json document. */
export const KIR_FORMAT = "poot.kir";
/** The current .kir.json version; readers reject other versions. */
export const KIR_VERSION = 1;

const SPECIAL: Record<string, number> = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity, "-0": -0 };

function encodeValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(encodeValue);
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    // Sorted keys make the text independent of how the kernel object was built.
    for (const key of Object.keys(o).sort()) {
      const x = o[key];
      if (x === undefined) continue;
      if (key === "value" && o["k"] === "const" && typeof x === "number" && (!Number.isFinite(x) || Object.is(x, -0)))
        out[key] = Object.is(x, -0) ? "-0" : String(x);
      else out[key] = encodeValue(x);
    }
    return out;
  }
  return v;
}

function decodeValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(decodeValue);
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, x] of Object.entries(o)) {
      if (key === "value" && o["k"] === "const" && typeof x === "string") {
        const n = SPECIAL[x];
        if (n === undefined) throw new KirJsonError("bad_format", `bad literal ${JSON.stringify(x)}`);
        out[key] = n;
      } else out[key] = decodeValue(x);
    }
    return out;
  }
  return v;
}

/** Encodes `kernel` as .kir.json text (canonical: the same kernel always gives the same bytes, ending in a newline). */
export function toKirJson(kernel: Kernel): string {
  return JSON.stringify({ format: KIR_FORMAT, kernel: encodeValue(kernel), version: KIR_VERSION }, null, 2) + "\n";
}

/**
 * Decodes .kir.json text and validates the kernel. Throws `KirJsonError` for malformed documents and
 * `KernelValidationError` for an invalid kernel. `file` only labels errors.
 */
export function parseKirJson(text: string, file?: string): Kernel {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new KirJsonError("bad_json", (e as Error).message, file);
  }
  if (doc === null || typeof doc !== "object" || (doc as { format?: unknown }).format !== KIR_FORMAT) {
    throw new KirJsonError("bad_format", `not a ${KIR_FORMAT} document`, file);
  }
  const { version, kernel } = doc as { version?: unknown; kernel?: unknown };
  if (version !== KIR_VERSION)
    throw new KirJsonError("bad_version", `version ${String(version)} (this reader knows ${KIR_VERSION})`, file);
  if (kernel === null || typeof kernel !== "object") throw new KirJsonError("bad_format", "missing kernel", file);
  const k = decodeValue(kernel) as Record<string, unknown>;
  for (const field of ["name", "workgroupSize", "specs", "buffers", "uniforms", "shared", "body"]) {
    if (!(field in k)) throw new KirJsonError("bad_format", `kernel lacks ${field}`, file);
  }
  return assertValidKernel(k as unknown as Kernel);
}
