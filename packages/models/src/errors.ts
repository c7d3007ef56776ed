// Typed errors of @poot/models: every bad-input failure carries a stable `code` and its context.
// Internal bugs go through `invariant()`, never through these classes.

/** Stable codes of {@link ModelError}; callers switch on these, never on messages. */
export type ModelErrorCode =
  | "io"
  | "truncated"
  | "bad-magic"
  | "unsupported-version"
  | "bad-header"
  | "bad-json"
  | "unsupported-dtype"
  | "bad-shape"
  | "out-of-bounds"
  | "overlap"
  | "misaligned"
  | "missing-tensor"
  | "wrong-dtype"
  | "missing-metadata"
  | "bad-metadata"
  | "unknown-architecture"
  | "bad-config"
  | "tokenizer"
  | "chat-template"
  | "closed"
  | "bad-weight"
  | "context-overflow";

/** Where an error happened: any of file, tensor, byte offset, metadata key, offending value. */
export interface ModelErrorContext {
  /** File path (or a label for in-memory data). */
  readonly file?: string;
  /** Tensor name. */
  readonly tensor?: string;
  /** Byte offset in `file` where the problem was found. */
  readonly offset?: number;
  /** Metadata / config key. */
  readonly key?: string;
  /** The offending value, when small. */
  readonly value?: unknown;
}

function describe(ctx: ModelErrorContext): string {
  const parts: string[] = [];
  if (ctx.file !== undefined) parts.push(`file ${ctx.file}`);
  if (ctx.tensor !== undefined) parts.push(`tensor ${ctx.tensor}`);
  if (ctx.offset !== undefined) parts.push(`byte offset ${ctx.offset}`);
  if (ctx.key !== undefined) parts.push(`key ${ctx.key}`);
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}

/** Base class of every bad-input error raised by @poot/models. */
export class ModelError extends Error {
  /** Stable machine-readable code. */
  readonly code: ModelErrorCode;
  /** File path, when known. */
  readonly file: string | undefined;
  /** Tensor name, when known. */
  readonly tensor: string | undefined;
  /** Byte offset, when known. */
  readonly offset: number | undefined;
  /** Metadata or config key, when known. */
  readonly key: string | undefined;
  /** Offending value, when known. */
  readonly value: unknown;

  /** @param code stable code; @param message human text; @param ctx location context. */
  constructor(code: ModelErrorCode, message: string, ctx: ModelErrorContext = {}, options?: { cause?: unknown }) {
    super(message + describe(ctx), options);
    this.name = "ModelError";
    this.code = code;
    this.file = ctx.file;
    this.tensor = ctx.tensor;
    this.offset = ctx.offset;
    this.key = ctx.key;
    this.value = ctx.value;
  }
}

/** A checkpoint file (safetensors / GGUF) is malformed, truncated or unsupported. */
export class CheckpointFormatError extends ModelError {
  override readonly name = "CheckpointFormatError";
}

/** A tensor that was asked for does not exist in the checkpoint. */
export class MissingTensorError extends ModelError {
  override readonly name = "MissingTensorError";
  /** @param tensor the missing name; @param file the checkpoint. */
  constructor(tensor: string, file: string) {
    super("missing-tensor", `no tensor named "${tensor}"`, { tensor, file });
  }
}

/** A tensor has a storage type this package cannot decode (names the ggml type id or dtype). */
export class UnsupportedTensorTypeError extends ModelError {
  override readonly name = "UnsupportedTensorTypeError";
}

/** The model's architecture is not one poot knows. */
export class UnknownArchitectureError extends ModelError {
  override readonly name = "UnknownArchitectureError";
  /** The architecture string found in config.json / GGUF metadata. */
  readonly architecture: string;
  /** @param architecture the unknown name; @param file where it was read. */
  constructor(architecture: string, file?: string) {
    super("unknown-architecture", `unknown model architecture "${architecture}"`, { file, value: architecture });
    this.architecture = architecture;
  }
}

/** A config.json or GGUF metadata value is missing or has the wrong type. */
export class ConfigError extends ModelError {
  override readonly name = "ConfigError";
}

/** A tokenizer or chat template could not be built or used. */
export class TokenizerError extends ModelError {
  override readonly name = "TokenizerError";
}

/** A checkpoint's tensors do not fit the traced model (wrong shape or type), or a run exceeds the traced context. */
export class TraceError extends ModelError {
  override readonly name = "TraceError";
}

/** Internal consistency check: a failure is a bug in @poot/models, not bad input. */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`@poot/models internal invariant failed: ${message}`);
}

/** Node's error codes a user fixes without the errno text: the message said instead. */
const IO_CAUSES: Readonly<Record<string, string>> = {
  ENOENT: "no such file or folder",
  EACCES: "permission denied",
  EISDIR: "a folder, not a file",
  ENOTDIR: "a path through a file, not a folder",
};

/**
 * The `io` ModelError for a failed open or stat of `file`: "no such file or folder" for ENOENT (and the like)
 * rather than Node's `ENOENT: no such file or directory, stat '<file>'`, which repeats the path the error names.
 */
export function ioError(cause: unknown, file: string, verb = "open"): ModelError {
  const code = (cause as NodeJS.ErrnoException | null)?.code;
  const plain = code === undefined ? undefined : IO_CAUSES[code];
  return new ModelError("io", plain ?? `cannot ${verb}: ${(cause as Error).message}`, { file }, { cause });
}
