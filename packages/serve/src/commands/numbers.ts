// Parsing of numeric command-line options (--max-tokens, --temperature, ...) into numbers; bad input is a
// CliError that names the flag and the text given.
import { CliError } from "../errors.js";

/** Parses `value` of `flag` as an integer or a finite float. */
export function parseNumber(flag: string, value: string, kind: "int" | "float", command: string): number {
  const n = Number(value);
  const ok = value.trim() !== "" && (kind === "int" ? Number.isSafeInteger(n) : Number.isFinite(n));
  if (!ok)
    throw new CliError("bad-input", `${flag} must be ${kind === "int" ? "an integer" : "a number"}, got "${value}"`, {
      command,
    });
  return n;
}
