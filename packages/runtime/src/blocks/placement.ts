// Placement: which device each block runs on (decision 1701). `--place "0-7:cuda,8-15:cpu,head:cuda"` names layer
// ranges (and `embed` / `head`); `--gpu-layers N` puts the last N layers and the head on the accelerator and the
// rest on the host, llama.cpp's habit. Every check runs before any weight is read.
import { RuntimeError } from "../errors.js";
import type { BlockCut } from "./cut.js";

/** The device of every block: index 0 the embedding, 1..layers the layers, layers + 1 the head. */
export interface Placement {
  /** Layers of the model. */
  readonly layers: number;
  /** Device name per block index. */
  readonly devices: readonly string[];
}

/** A run of consecutive blocks on one device: what runs as one unit (bridging, decision 1702). */
export interface UnitSpan {
  /** The device. */
  readonly device: string;
  /** First block index. */
  readonly first: number;
  /** Last block index (inclusive). */
  readonly last: number;
}

function bad(message: string, value?: unknown): never {
  throw new RuntimeError("bad-placement", message, { param: "placement", value });
}

/** Every block on one device (the default). */
export function placeAll(layers: number, device: string): Placement {
  return { layers, devices: Array.from({ length: layers + 2 }, () => device) };
}

/**
 * llama.cpp's `--n-gpu-layers N`: the last `n` layers (and the head, when n >= 1) on `accelerator`, the
 * embedding and the other layers on `host`. `n` larger than the layer count means every layer.
 */
export function gpuLayers(n: number, layers: number, accelerator: string, host = "cpu"): Placement {
  if (!Number.isSafeInteger(n) || n < 0) bad(`--gpu-layers must be a non-negative integer, got ${n}`, n);
  const k = Math.min(n, layers);
  const devices = Array.from({ length: layers + 2 }, (_, b) =>
    (b >= 1 && b <= layers && b > layers - k) || (b === layers + 1 && k > 0) ? accelerator : host,
  );
  // The embedding runs with layer 0 (a lookup: no reason to hand its rows across a boundary).
  devices[0] = devices[1]!;
  return { layers, devices };
}

/** Weight bytes a placement puts on `device` (each tensor once: tied embeddings on both ends count once there). */
export function weightBytesOn(cut: BlockCut, p: Placement, device: string): number {
  const seen = new Set<string>();
  let bytes = 0;
  for (const b of cut.blocks)
    if (p.devices[b.index] === device)
      for (const c of b.consts) if (!seen.has(c)) seen.add(c), (bytes += cut.constBytes.get(c)!);
  return bytes;
}

/** The default placement of a model on a device with `memory` bytes for weights (decision 1705). */
export interface FitPlacement {
  /** Every block on `accelerator` when its weights fit, else {@link gpuLayers} of the most layers that fit. */
  readonly placement: Placement;
  /** Layers on the accelerator (the model's layer count when everything fits). */
  readonly layersOnDevice: number;
  /** Weight bytes the placement puts on the accelerator (at most `memory`). */
  readonly deviceBytes: number;
  /** Weight bytes of the whole model. */
  readonly totalBytes: number;
}

/**
 * "As many layers as fit": every block on `accelerator` when the model's weights fit in `memory` bytes, else the
 * largest N for which {@link gpuLayers}(N)'s blocks on the accelerator (the last N layers and the head) fit, the
 * rest on `host`. N is 0 (everything on the host) when not even the head and one layer fit.
 */
export function fitPlacement(cut: BlockCut, accelerator: string, memory: number, host = "cpu"): FitPlacement {
  const L = cut.layers;
  const all = placeAll(L, accelerator);
  const totalBytes = weightBytesOn(cut, all, accelerator);
  if (totalBytes <= memory) return { placement: all, layersOnDevice: L, deviceBytes: totalBytes, totalBytes };
  for (let n = L; n >= 1; n--) {
    const p = gpuLayers(n, L, accelerator, host);
    const bytes = weightBytesOn(cut, p, accelerator);
    if (bytes <= memory) return { placement: p, layersOnDevice: n, deviceBytes: bytes, totalBytes };
  }
  return { placement: placeAll(L, host), layersOnDevice: 0, deviceBytes: 0, totalBytes };
}

/**
 * Parses `--place "0-7:cuda,8-15:cpu,head:cuda"`: comma-separated `RANGE:DEVICE` entries where RANGE is a
 * layer `N`, a range `N-M`, `embed` or `head`. Every layer must be named exactly once; `embed` defaults to
 * layer 0's device and `head` to the last layer's. Devices must be in `known`.
 */
export function parsePlacement(text: string, layers: number, known: readonly string[]): Placement {
  const devices: (string | undefined)[] = new Array(layers + 2).fill(undefined);
  const entries = text.split(",").map((s) => s.trim());
  if (entries.some((e) => e === "")) bad(`--place has an empty entry: "${text}"`, text);
  for (const entry of entries) {
    const m = /^(embed|head|(\d+)(?:-(\d+))?):([A-Za-z0-9_-]+)$/.exec(entry);
    if (m === null) bad(`--place entry "${entry}" is not RANGE:DEVICE (RANGE: N, N-M, embed or head)`, entry);
    const device = m[4]!;
    if (!known.includes(device))
      bad(
        `--place entry "${entry}" names device "${device}", which is not available (available: ${known.join(", ")})`,
        device,
      );
    let lo: number, hi: number;
    if (m[1] === "embed") lo = hi = 0;
    else if (m[1] === "head") lo = hi = layers + 1;
    else {
      const a = Number(m[2]),
        b = m[3] === undefined ? a : Number(m[3]);
      if (b < a) bad(`--place entry "${entry}": the range ${a}-${b} is backwards`, entry);
      if (b >= layers) bad(`--place entry "${entry}": the model has layers 0-${layers - 1}`, entry);
      lo = a + 1;
      hi = b + 1;
    }
    for (let k = lo; k <= hi; k++) {
      if (devices[k] !== undefined)
        bad(
          `--place entry "${entry}" overlaps an earlier entry at ${k === 0 ? "embed" : k === layers + 1 ? "head" : `layer ${k - 1}`}`,
          entry,
        );
      devices[k] = device;
    }
  }
  const missing: number[] = [];
  for (let l = 0; l < layers; l++) if (devices[l + 1] === undefined) missing.push(l);
  if (missing.length > 0)
    bad(`--place leaves layer(s) ${ranges(missing)} unplaced (the model has layers 0-${layers - 1})`, missing);
  devices[0] ??= devices[1];
  devices[layers + 1] ??= devices[layers];
  return { layers, devices: devices as string[] };
}

/** `0-3, 7` for [0, 1, 2, 3, 7]. */
function ranges(xs: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
    out.push(i === j ? `${xs[i]}` : `${xs[i]}-${xs[j]}`);
    i = j + 1;
  }
  return out.join(", ");
}

/** The runs of consecutive blocks on one device, in order: each runs as one unit. */
export function unitSpans(p: Placement): UnitSpan[] {
  const out: UnitSpan[] = [];
  p.devices.forEach((device, b) => {
    const last = out[out.length - 1];
    if (last !== undefined && last.device === device) out[out.length - 1] = { ...last, last: b };
    else out.push({ device, first: b, last: b });
  });
  return out;
}

/** The placement as `--place` text (layers by range, embed and head named when they differ from their neighbour). */
export function formatPlacement(p: Placement): string {
  const L = p.layers;
  const parts: string[] = [];
  if (p.devices[0] !== p.devices[1]) parts.push(`embed:${p.devices[0]}`);
  for (let l = 0; l < L; ) {
    let j = l;
    while (j + 1 < L && p.devices[j + 2] === p.devices[l + 1]) j++;
    parts.push(`${l === j ? l : `${l}-${j}`}:${p.devices[l + 1]}`);
    l = j + 1;
  }
  if (p.devices[L + 1] !== p.devices[L]) parts.push(`head:${p.devices[L + 1]}`);
  return parts.join(",");
}

/** Parses a memory size: bytes, or a number with K/M/G (powers of 1024, optional `iB`/`B`), e.g. `512M`, `1.5GiB`. */
export function parseSize(text: string, flag = "size"): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?B)?$/.exec(text.trim());
  if (m === null)
    throw new RuntimeError("bad-config", `${flag} must be a size like 512M or 2G, got "${text}"`, {
      param: flag,
      value: text,
    });
  const scale = { "": 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }[
    m[2]!.toLowerCase() as "" | "k" | "m" | "g" | "t"
  ];
  return Math.floor(Number(m[1]) * scale);
}
