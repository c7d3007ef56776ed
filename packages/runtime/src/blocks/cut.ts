// Cutting a traced model into blocks (decision 1700): the embedding, one block per layer, and the head. The cut
// points are the residual-stream values the tracer names at each layer boundary (`embed.out`, `layers.N.out`);
// the cut is then checked by dataflow: a block may read the residual stream of the block before it, slots
// (positions, page table, ...), weights and its own State, nothing else of another block.
import { isLiteral, numel, storageBytes, type Graph, type Value, type ValueId } from "@poot/graph-ir";
import { RuntimeError } from "../errors.js";

/** What a block is. */
export type BlockKind = "embed" | "layer" | "head";

/** One block of a model: a range of the traced graph between two residual-stream boundaries. */
export interface BlockInfo {
  /** Index in the block list: 0 is the embedding, 1..L the layers, L+1 the head. */
  readonly index: number;
  /** What it is. */
  readonly kind: BlockKind;
  /** The layer index for layer blocks, else null. */
  readonly layer: number | null;
  /** A name for messages: `embed`, `layer 3`, `head`. */
  readonly name: string;
  /** Weights the block reads (checkpoint tensor names). */
  readonly consts: readonly string[];
  /** Stored bytes of those weights. */
  readonly weightBytes: number;
  /** State keys the block owns (its KV pages, recurrent state). */
  readonly states: readonly string[];
}

/** A traced graph cut into blocks. */
export interface BlockCut {
  /** The whole graph. */
  readonly graph: Graph;
  /** The blocks in execution order. */
  readonly blocks: readonly BlockInfo[];
  /** Layers of the model (blocks.length - 2). */
  readonly layers: number;
  /** The residual-stream value each block but the head produces (index = block index). */
  readonly boundaries: readonly ValueId[];
  /** Elements of the residual stream crossing one boundary per step (rows x hidden size). */
  readonly residualElements: number;
  /** Stored bytes of every weight, by checkpoint tensor name. */
  readonly constBytes: ReadonlyMap<string, number>;
}

/** The slot a block reads the previous block's residual stream from, and the output it writes its own to. */
export const RESIDUAL = "residual";

function fail(message: string): never {
  throw new RuntimeError("bad-graph", message);
}

/** Finds the blocks of a traced model graph and checks that only the residual stream crosses each boundary. */
export function findBlocks(graph: Graph): BlockCut {
  const byName = new Map<string, ValueId>();
  for (const v of graph.values) if (v.name !== undefined && v.storage.kind === "device") byName.set(v.name, v.id);
  const embedOut = byName.get("embed.out");
  if (embedOut === undefined) fail("the graph has no embed.out value: it was not traced by a block-aware tracer");
  const boundaries: ValueId[] = [embedOut];
  for (let i = 0; byName.has(`layers.${i}.out`); i++) boundaries.push(byName.get(`layers.${i}.out`)!);
  const L = boundaries.length - 1;
  const logits = graph.outputs.find((o) => o.name === "logits");
  if (logits === undefined || graph.outputs.length !== 1) fail("a model graph has exactly one output, logits");
  const level = blockLevels(graph, boundaries);
  for (let i = 0; i < boundaries.length; i++) {
    const l = level[boundaries[i]!]!;
    if (l !== i && !(i === 0 && l === -1))
      fail(`${graph.values[boundaries[i]!]!.name} is computed in block ${l}, not at the end of block ${i}`);
  }
  // Each state pair belongs to the block that computes its new value.
  const stateOwner = new Map<string, number>();
  for (const p of graph.states) {
    const l = level[p.output]!;
    if (l < 1) fail(`state ${p.key} does not depend on any layer's input: it belongs to no block`);
    stateOwner.set(p.key, l);
  }
  const constBytes = new Map<string, number>();
  for (const v of graph.values)
    if (v.storage.kind === "const") constBytes.set(v.storage.key, storageBytes(v.dtype, numel(v.shape)));
  const blocks: BlockInfo[] = [];
  for (let k = 0; k <= L + 1; k++) {
    const outs = k === L + 1 ? [logits.value] : [boundaries[k]!];
    const owned = graph.states.filter((p) => stateOwner.get(p.key) === k);
    const stop = k === 0 ? null : boundaries[k - 1]!;
    const eqns = closure(graph, [...outs, ...owned.map((p) => p.output)], stop);
    const consts = new Set<string>();
    for (const e of eqns) {
      const eq = graph.eqns[e]!;
      // Equations of another block are reached only through an input checked below: the reader names the leak.
      if (level[eq.out] !== -1 && level[eq.out] !== k) continue;
      for (const o of eq.inputs) {
        if (isLiteral(o)) continue;
        const v = graph.values[o]!;
        if (v.storage.kind === "const") consts.add(v.storage.key);
        if (v.storage.kind === "state" && stateOwner.get(v.storage.key) !== k) {
          fail(
            `${blockName(k, L)} reads state ${v.storage.key} of ${blockName(stateOwner.get(v.storage.key) ?? -1, L)}`,
          );
        }
        if (v.storage.kind !== "device" || o === stop) continue;
        const l = level[o]!;
        if (l !== -1 && l !== k)
          fail(
            `${blockName(k, L)} reads ${describe(graph, o)} of ${blockName(l, L)}: only the residual stream may cross a block boundary`,
          );
      }
    }
    let weightBytes = 0;
    for (const c of consts) weightBytes += constBytes.get(c)!;
    const kind: BlockKind = k === 0 ? "embed" : k === L + 1 ? "head" : "layer";
    blocks.push({
      index: k,
      kind,
      layer: kind === "layer" ? k - 1 : null,
      name: blockName(k, L),
      consts: [...consts],
      weightBytes,
      states: owned.map((p) => p.key),
    });
  }
  return { graph, blocks, layers: L, boundaries, residualElements: numel(graph.values[embedOut]!.shape), constBytes };
}

/** `embed`, `layer N` or `head` for block index `k` of a model with `layers` layers. */
export function blockName(k: number, layers: number): string {
  return k === 0 ? "embed" : k === layers + 1 ? "head" : k < 0 ? "no block" : `layer ${k - 1}`;
}

function describe(graph: Graph, id: ValueId): string {
  const v = graph.values[id]!;
  return v.name !== undefined ? `"${v.name}"` : `value %${id}`;
}

/**
 * The block of every device value: the index of the last boundary its computation passes through plus one
 * (a value read from boundary j is in block j + 1), or -1 for a value that depends on no boundary (positions,
 * masks, RoPE tables, the embedding lookup: recomputed by whichever block needs them).
 */
function blockLevels(graph: Graph, boundaries: readonly ValueId[]): Int32Array {
  const level = new Int32Array(graph.values.length).fill(-1);
  const crossing = new Map(boundaries.map((v, i) => [v, i + 1]));
  for (const e of graph.eqns) {
    let l = -1;
    for (const o of e.inputs) {
      if (isLiteral(o)) continue;
      l = Math.max(l, crossing.get(o) ?? level[o]!);
    }
    level[e.out] = l;
  }
  // The embedding's output is block 0's by definition (its lookup depends on no boundary).
  level[boundaries[0]!] = Math.max(level[boundaries[0]!]!, 0);
  return level;
}

/** Indices of the equations `roots` need, in graph order, not looking past `stop` (a block's residual input). */
export function closure(graph: Graph, roots: readonly ValueId[], stop: ValueId | null): number[] {
  const producer = producers(graph);
  const need = new Set<number>();
  const todo = [...roots];
  const seen = new Set<ValueId>();
  while (todo.length > 0) {
    const v = todo.pop()!;
    if (seen.has(v) || v === stop) continue;
    seen.add(v);
    const e = producer.get(v);
    if (e === undefined) continue;
    need.add(e);
    for (const o of graph.eqns[e]!.inputs) if (!isLiteral(o)) todo.push(o);
  }
  return [...need].sort((a, b) => a - b);
}

const producerCache = new WeakMap<Graph, Map<ValueId, number>>();
function producers(graph: Graph): Map<ValueId, number> {
  let m = producerCache.get(graph);
  if (m === undefined) {
    m = new Map(graph.eqns.map((e, i) => [e.out, i]));
    producerCache.set(graph, m);
  }
  return m;
}

/**
 * The graph of blocks `first..last` (block indices) run as one unit: it reads the residual stream of block
 * `first - 1` from the `residual` slot (f32 [rows, hidden]) unless it starts at the embedding, and writes
 * `logits` when it ends at the head, else its residual stream as the `residual` output. It keeps the State
 * pairs of its blocks and the slots its equations read (positions, page table, ...).
 */
export function unitGraph(cut: BlockCut, first: number, last: number): Graph {
  const { graph, blocks, boundaries } = cut;
  if (!(Number.isInteger(first) && Number.isInteger(last) && first >= 0 && last >= first && last < blocks.length)) {
    throw new RuntimeError("bad-placement", `block range ${first}..${last} is not within 0..${blocks.length - 1}`);
  }
  const head = last === blocks.length - 1;
  const outValue = head ? graph.outputs[0]!.value : boundaries[last]!;
  const stateKeys = new Set(blocks.slice(first, last + 1).flatMap((b) => b.states));
  const pairs = graph.states.filter((p) => stateKeys.has(p.key));
  const stop = first === 0 ? null : boundaries[first - 1]!;
  const eqns = closure(graph, [outValue, ...pairs.map((p) => p.output)], stop);
  const remap = new Map<ValueId, ValueId>();
  const values: Value[] = [];
  const use = (id: ValueId): ValueId => {
    let n = remap.get(id);
    if (n === undefined) {
      n = values.length;
      const v = graph.values[id]!;
      const storage = id === stop ? { kind: "slot" as const, key: RESIDUAL, slot: "Residual" } : v.storage;
      values.push({ ...v, id: n, storage });
      remap.set(id, n);
    }
    return n;
  };
  if (stop !== null) use(stop);
  for (const p of pairs) use(p.input);
  const newEqns = eqns.map((i) => {
    const e = graph.eqns[i]!;
    const inputs = e.inputs.map((o) => (isLiteral(o) ? o : use(o)));
    return { ...e, inputs, out: use(e.out) };
  });
  return {
    values,
    eqns: newEqns,
    outputs: [{ name: head ? "logits" : RESIDUAL, value: use(outValue) }],
    states: pairs.map((p) => ({ key: p.key, input: use(p.input), output: use(p.output) })),
  };
}
