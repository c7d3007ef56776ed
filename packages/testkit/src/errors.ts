// The one error type of @poot/testkit.

/** What went wrong: a fixture file is absent, or a regenerated fixture could not be made or does not match. */
export type FixtureErrorCode = "missing" | "regenerate";

/** A fixture problem; the message names the file (relative to the repo's fixtures/ folder). */
export class FixtureError extends Error {
  /** Machine-readable kind. */
  readonly code: FixtureErrorCode;
  constructor(code: FixtureErrorCode, message: string) {
    super(message);
    this.name = "FixtureError";
    this.code = code;
  }
}
