// The lowering cache on disk: one file per LoweredProgram, named by the content hash of what it was lowered from
// (graph, target data, name, lowering version, the lowering code's own hash). Each file carries the SHA-256 of its body; a file whose body does
// not match is reported, deleted and rebuilt, never used.

import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { graphToJsonString } from "@poot/graph-ir";
import { Program } from "@poot/graph-plan";
import { stageParts, type StageInput } from "../contract.js";
import { lowerProgram } from "./lower.js";
import type { LoweredProgram, LoweringTarget } from "./types.js";

/** Bumped whenever the lowering or the entry format changes what a key would produce. */
export const LOWERING_VERSION = 3;

/** The packages whose code decides what a lowering produces (besides this one). */
const PRODUCERS = ["@poot/graph-ir", "@poot/graph-plan", "@poot/kernelgen", "@poot/codegen", "@poot/kernel-dsl"];

let fingerprint: string | undefined;

/**
 * SHA-256 over the code that lowers a program: the JavaScript of this package and of graph-ir, graph-plan,
 * kernel-dsl, kernelgen (with its imported kernel library, `assets/`) and codegen, as installed. Part of every cache
 * key, so an upgrade or a rebuild with other kernels never serves entries the old code lowered. Computed once per
 * process (a few MB read); a package that cannot be resolved (a bundle that inlines it) is covered by the bundle's
 * own file, which is in this package's folder.
 */
export function loweringCodeFingerprint(): string {
  if (fingerprint !== undefined) return fingerprint;
  const dirs = [path.dirname(fileURLToPath(import.meta.url))];
  const roots: string[] = [];
  for (const p of PRODUCERS) {
    const root = packageRoot(p, roots);
    if (root === null) continue; // inlined into this bundle
    roots.push(root);
    dirs.push(path.join(root, "dist"), path.join(root, "assets"));
  }
  fingerprint = codeFingerprintOf(dirs);
  return fingerprint;
}

/**
 * The folder of package `name`: resolved from here, or (a dependency of a dependency, which a strict install does not
 * hoist) from the `node_modules` of a package already found; null when neither has it.
 */
function packageRoot(name: string, found: readonly string[]): string | null {
  try {
    return path.dirname(path.dirname(fileURLToPath(import.meta.resolve(name))));
  } catch {
    for (const root of found) {
      const dir = path.join(root, "node_modules", name);
      if (fs.existsSync(path.join(dir, "package.json"))) return fs.realpathSync(dir);
    }
    return null;
  }
}

/** SHA-256 over the code and JSON files below `dirs` (their paths below each and their bytes; declarations left out). */
export function codeFingerprintOf(dirs: readonly string[]): string {
  const h = createHash("sha256");
  for (const dir of dirs) hashTree(h, dir, "");
  return h.digest("hex");
}

/** Adds every code and JSON file below `dir` (sorted, by path below it; declarations left out) to `h`. */
function hashTree(h: ReturnType<typeof createHash>, dir: string, rel: string): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const file = path.join(dir, e.name);
    if (e.isDirectory()) hashTree(h, file, `${rel}${e.name}/`);
    else if (e.isFile() && /\.(m?js|cjs|ts|json)$/.test(e.name) && !/\.d\.m?ts$/.test(e.name))
      h.update(`${rel}${e.name}\0`).update(fs.readFileSync(file));
  }
}

/** The cache key of lowering `input` named `name` for `target`: SHA-256 over everything the result depends on. */
export function loweringKey(input: StageInput | Program, target: LoweringTarget, name: string): string {
  const graph = input instanceof Program ? input.source : stageParts(input).graph;
  const { fallback: _f, fixup: _x, ...data } = target;
  const h = createHash("sha256");
  h.update(
    JSON.stringify({
      version: LOWERING_VERSION,
      code: loweringCodeFingerprint(),
      name,
      target: data,
      compiled: input instanceof Program ? input.target : null,
    }),
  );
  h.update(graphToJsonString(graph));
  return h.digest("hex");
}

/** What one {@link LoweringCache.lower} did. */
export type CacheOutcome = "hit" | "miss" | "rebuilt" | "off";

/** Options of {@link LoweringCache}. */
export interface LoweringCacheOptions {
  /** The cache folder (the CLI passes `$XDG_CACHE_HOME/poot/lowered`); created on first write. */
  readonly dir: string;
  /** Told about a corrupted or unreadable entry (default: `console.warn`). */
  readonly warn?: (message: string) => void;
}

/** Counts of a cache's outcomes since it was made. */
export interface CacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly rebuilt: number;
}

/**
 * Opaque bytes a device keeps across processes (a Vulkan pipeline cache's data), by a name that identifies what may
 * read them (the device, its driver and version). {@link LoweringCache} is one.
 */
export interface BlobStore {
  /** The bytes stored under `name`, or null when absent (a corrupted entry: reported, deleted, null). */
  readBlob(name: string): Uint8Array | null;
  /** Stores `data` under `name` (replacing what was there). */
  writeBlob(name: string, data: Uint8Array): void;
}

/** A content-hashed disk cache of lowered programs, and the {@link BlobStore} of device code beside them. */
export class LoweringCache implements BlobStore {
  readonly dir: string;
  readonly #warn: (message: string) => void;
  #hits = 0;
  #misses = 0;
  #rebuilt = 0;
  /** The outcome of the last `lower` call. */
  last: CacheOutcome = "off";

  constructor(options: LoweringCacheOptions) {
    this.dir = options.dir;
    this.#warn = options.warn ?? ((m) => console.warn(m));
  }

  /** Hits, misses and rebuilds so far. */
  stats(): CacheStats {
    return { hits: this.#hits, misses: this.#misses, rebuilt: this.#rebuilt };
  }

  /** The entry file of `key`. */
  file(key: string): string {
    return path.join(this.dir, `${key}.lowered.json`);
  }

  /** The file of blob `name` (names are reduced to `[\w.-]`). */
  blobFile(name: string): string {
    return path.join(this.dir, `${name.replace(/[^\w.-]/g, "_")}.blob`);
  }

  /** The bytes of blob `name` when a sound entry exists; a corrupted one is reported, deleted and counted as rebuilt. */
  readBlob(name: string): Uint8Array | null {
    const body = this.#readChecked(this.blobFile(name), name, "device code cache");
    return body === null || body === "corrupted" ? null : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  }

  /** Stores `data` as blob `name` (atomically, with its SHA-256). */
  writeBlob(name: string, data: Uint8Array): void {
    this.#writeChecked(this.blobFile(name), { format: "poot-blob", key: name }, Buffer.from(data));
  }

  /** The lowered program of (input, target, name): read from the cache when a sound entry exists, else lowered and stored. */
  lower(input: StageInput | Program, target: LoweringTarget, name = "program"): LoweredProgram {
    const key = loweringKey(input, target, name);
    const hit = this.read(key);
    if (hit !== null) return hit;
    const lowered = lowerProgram(input, target, { name, key });
    this.write(lowered);
    return lowered;
  }

  /** The entry of `key`, or null when absent; a corrupted entry is reported, deleted and counted for rebuilding. */
  read(key: string): LoweredProgram | null {
    const body = this.#readChecked(this.file(key), key, "lowering cache");
    if (body === "corrupted") this.#rebuilt++;
    else if (body === null) this.#misses++;
    else this.#hits++;
    this.last = body === "corrupted" ? "rebuilt" : body === null ? "miss" : "hit";
    return body === null || body === "corrupted" ? null : deserialize(body.toString("utf8"));
  }

  /** Stores `lowered` under its key (atomically: written aside, then renamed). */
  write(lowered: LoweredProgram): void {
    if (this.last !== "rebuilt") this.last = "miss";
    const header = { format: "poot-lowered", version: LOWERING_VERSION, key: lowered.key };
    this.#writeChecked(this.file(lowered.key), header, Buffer.from(serialize(lowered)));
  }

  /**
   * The body of `file` (a JSON header line with its SHA-256 and `key`, then the body), null when absent; a corrupted
   * file is reported and deleted.
   */
  #readChecked(file: string, key: string, what: string): Buffer | null | "corrupted" {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      return null;
    }
    const nl = bytes.indexOf(10);
    const body = nl < 0 ? Buffer.alloc(0) : bytes.subarray(nl + 1);
    let header: { sha256?: unknown; key?: unknown } = {};
    try {
      header = JSON.parse(bytes.subarray(0, nl < 0 ? bytes.length : nl).toString("utf8")) as typeof header;
    } catch {
      // An unparsable header is corruption like a wrong hash.
    }
    if (header.sha256 !== createHash("sha256").update(body).digest("hex") || header.key !== key) {
      this.#warn(`poot: ${what} entry ${file} is corrupted (hash mismatch); rebuilding it`);
      fs.rmSync(file, { force: true });
      return "corrupted";
    }
    return body;
  }

  /** Writes `header` (with the body's SHA-256) and `body` to `file`, atomically (written aside, then renamed). */
  #writeChecked(file: string, header: Record<string, unknown>, body: Buffer): void {
    const line = JSON.stringify({ ...header, sha256: createHash("sha256").update(body).digest("hex") });
    try {
      fs.mkdirSync(this.dir, { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`${line}\n`), body]));
      fs.renameSync(tmp, file);
    } catch (e) {
      this.#warn(
        `poot: cannot write the ${header["format"] === "poot-blob" ? "device code" : "lowering"} cache in ${this.dir}: ${(e as Error).message}`,
      );
    }
  }
}

/** A lowered program as JSON text (Maps as entry lists, byte arrays as base64). */
export function serialize(p: LoweredProgram): string {
  return JSON.stringify(p, (_k, v: unknown) => {
    if (v instanceof Map) return { $map: [...v.entries()] };
    if (v instanceof Uint8Array) return { $b64: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
    return v;
  });
}

/** The inverse of {@link serialize}. */
export function deserialize(text: string): LoweredProgram {
  return JSON.parse(text, (_k, v: unknown) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      const o = v as { $map?: [unknown, unknown][]; $b64?: string };
      if (o.$map !== undefined) return new Map(o.$map);
      if (o.$b64 !== undefined) return new Uint8Array(Buffer.from(o.$b64, "base64"));
    }
    return v;
  }) as LoweredProgram;
}

/** How a device's programs are lowered: for `target`, through `cache` when one is given (what every executor uses). */
export function lowerWith(
  target: LoweringTarget,
  cache?: LoweringCache,
): (input: StageInput, name: string) => LoweredProgram {
  return (input, name) =>
    cache !== undefined ? cache.lower(input, target, name) : lowerProgram(input, target, { name });
}
