// Byte sources behind the checkpoint readers: a file read through positioned reads, or memory.
// Nothing here reads more than asked for, so opening a checkpoint costs only its header.
import * as fs from "node:fs";
import { CheckpointFormatError, ModelError, ioError } from "./errors.js";

/** Random-access bytes with a known size: the only thing the parsers need. */
export interface ByteSource {
  /** Path or label used in error messages. */
  readonly label: string;
  /** Total size in bytes. */
  readonly size: number;
  /** Reads exactly `length` bytes at `offset` into a fresh array (typed error if out of range). */
  readSync(offset: number, length: number): Uint8Array;
  /** Reads exactly `dst.byteLength` bytes at `offset` into `dst` (a device's memory: no copy in between). */
  readInto(offset: number, dst: Uint8Array): void;
  /** Async variant of {@link ByteSource.readSync}. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Where `length` bytes at `offset` lie in an open file (a device may map them instead of reading); absent in memory. */
  fileRange?(offset: number, length: number): FileRange;
  /** Releases the file handle (idempotent). */
  close(): void;
}

/** Bytes of an open file: its descriptor (valid until the source closes), byte offset and length. */
export interface FileRange {
  /** The open file's descriptor. */
  readonly fd: number;
  /** Byte offset in the file. */
  readonly offset: number;
  /** Byte length. */
  readonly length: number;
}

function checkRange(src: ByteSource, offset: number, length: number): void {
  if (
    !Number.isSafeInteger(offset) ||
    !Number.isSafeInteger(length) ||
    offset < 0 ||
    length < 0 ||
    offset + length > src.size
  ) {
    throw new CheckpointFormatError("truncated", `read of ${length} bytes past the end (size ${src.size})`, {
      file: src.label,
      offset,
    });
  }
}

/** A file opened once and read with positioned reads (`fs.readSync` / `fs.read`). */
export class FileSource implements ByteSource {
  readonly label: string;
  readonly size: number;
  private fd: number | undefined;

  /** Opens `path` read-only; a missing or unreadable file is a typed `io` error. */
  constructor(path: string) {
    this.label = path;
    try {
      this.fd = fs.openSync(path, "r");
      this.size = fs.fstatSync(this.fd).size;
    } catch (cause) {
      throw ioError(cause, path);
    }
  }

  private handle(): number {
    if (this.fd === undefined) throw new ModelError("closed", "checkpoint is closed", { file: this.label });
    return this.fd;
  }

  readSync(offset: number, length: number): Uint8Array {
    const out = new Uint8Array(length);
    this.readInto(offset, out);
    return out;
  }

  readInto(offset: number, out: Uint8Array): void {
    const length = out.byteLength;
    checkRange(this, offset, length);
    const fd = this.handle();
    let done = 0;
    // A positioned read may return fewer bytes than asked; loop until filled.
    while (done < length) {
      const n = fs.readSync(fd, out, done, length - done, offset + done);
      if (n === 0)
        throw new CheckpointFormatError("truncated", "file ended while reading", {
          file: this.label,
          offset: offset + done,
        });
      done += n;
    }
  }

  fileRange(offset: number, length: number): FileRange {
    checkRange(this, offset, length);
    return { fd: this.handle(), offset, length };
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    const out = new Uint8Array(length);
    const fd = this.handle();
    let done = 0;
    while (done < length) {
      const n = await new Promise<number>((resolve, reject) =>
        fs.read(fd, out, done, length - done, offset + done, (err, bytes) => (err ? reject(err) : resolve(bytes))),
      );
      if (n === 0)
        throw new CheckpointFormatError("truncated", "file ended while reading", {
          file: this.label,
          offset: offset + done,
        });
      done += n;
    }
    return out;
  }

  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Bytes already in memory (tests, fuzzing, data fetched elsewhere). */
export class MemorySource implements ByteSource {
  readonly size: number;
  /** @param bytes the whole file; @param label name used in errors. */
  constructor(
    private readonly bytes: Uint8Array,
    readonly label = "<memory>",
  ) {
    this.size = bytes.byteLength;
  }
  readSync(offset: number, length: number): Uint8Array {
    checkRange(this, offset, length);
    return this.bytes.slice(offset, offset + length);
  }
  readInto(offset: number, dst: Uint8Array): void {
    checkRange(this, offset, dst.byteLength);
    dst.set(this.bytes.subarray(offset, offset + dst.byteLength));
  }
  read(offset: number, length: number): Promise<Uint8Array> {
    return Promise.resolve(this.readSync(offset, length));
  }
  close(): void {}
}
