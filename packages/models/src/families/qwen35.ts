// Qwen3.5 gated delta-net linear attention as primitives: causal depthwise conv1d with a conv State, L2-normed
// q/k, and the gated delta rule unrolled token by token over a recurrent State [B, Hv, Dk, Dv].
import type { Ref } from "@poot/graph-ir";
import { TraceError } from "../errors.js";
import { sigmoid } from "./attention.js";
import type { TraceContext } from "./context.js";
import { linear, rmsNorm } from "./transformer.js";

/** x · rsqrt(Σx² + 1e-6) over the last axis (the FLA / HF l2norm). */
function l2norm(ctx: TraceContext, x: Ref): Ref {
  const b = ctx.b;
  return b.mul(x, b.recip(b.sqrt(b.add(b.sum(b.mul(x, x), [-1], true), 1e-6))));
}

/** torch softplus (β = 1, threshold 20): x above 20 passes through. */
function softplus(ctx: TraceContext, x: Ref): Ref {
  const b = ctx.b;
  return b.select(b.cmp("Gt", x, 20), x, b.unary("Log", b.add(b.exp(x), 1)));
}

/** A State of `shape` (zeros for a stateless prefill, whose final state is dropped). */
function stateOrZeros(
  ctx: TraceContext,
  key: string,
  shape: readonly number[],
): { value: Ref; commit: (next: Ref) => void } {
  const b = ctx.b;
  if (ctx.shape.context === null) {
    const n = shape.reduce((p, d) => p * d, 1);
    return { value: b.computed("f32", shape, new Float32Array(n), `${key}.zeros`), commit: () => {} };
  }
  const short = key.slice(key.lastIndexOf(".") + 1);
  if (ctx.paged !== null) {
    // Paged graphs: one pool of `lanes` lanes shared by every sequence; each reads and writes its own lane.
    const B = shape[0]!,
      per = shape.slice(1);
    const lanes = ctx.stateLanes();
    const pool = b.name(b.state(key, "f32", [ctx.paged.lanes, ...per]), short);
    // A sequence at position 0 starts from the zero state, whatever a lane's previous owner left in it.
    const fresh = b.reshape(b.cmp("Eq", ctx.pos!, 0), [B, ...per.map(() => 1)]);
    const value = b.select(fresh, 0, b.gather(pool, lanes, 0));
    return {
      value,
      commit: (next) => {
        let out = pool;
        for (let s = 0; s < B; s++) {
          const row = B === 1 ? next : b.slice(next, [s, ...per.map(() => 0)], [s + 1, ...per]);
          out = b.dynamicUpdateSlice(out, row, [
            b.reshape(b.slice(lanes, [s], [s + 1]), []),
            ...per.map(() => ctx.i32(0)),
          ]);
        }
        b.setState(pool, out);
      },
    };
  }
  const s = b.name(b.state(key, "f32", shape), short);
  return { value: s, commit: (next) => b.setState(s, next) };
}

/** Causal depthwise conv1d + SiLU over x [B, T, C] with kernel [C, 1, K]; the last K-1 inputs carry over in State. */
function causalConv(ctx: TraceContext, x: Ref, layer: number): Ref {
  const b = ctx.b;
  const { batch: B, tokens: T } = ctx.shape;
  const C = x.shape[2]!,
    K = ctx.config.linearAttention!.convKernel;
  const weight = b.reshape(b.f32(ctx.weight(ctx.weights.layerName(layer, "linConv"), [C, 1, K])), [C, K]);
  const st = stateOrZeros(ctx, `layers.${layer}.conv`, [B, C, K - 1]);
  const xp = b.concat([st.value, b.transpose(x, [0, 2, 1])], 2);
  let acc: Ref | null = null;
  for (let k = 0; k < K; k++) {
    const tap = b.mul(b.slice(xp, [0, 0, k], [B, C, k + T]), b.reshape(b.slice(weight, [0, k], [C, k + 1]), [1, C, 1]));
    acc = acc === null ? tap : b.add(acc, tap);
  }
  st.commit(b.slice(xp, [0, 0, T], [B, C, T + K - 1]));
  return b.transpose(b.silu(acc!), [0, 2, 1]);
}

/** Gated delta-net token mixer of one Qwen3.5 layer, [N, D] -> [N, D]. */
export function gatedDeltaNet(ctx: TraceContext, x: Ref, layer: number): Ref {
  const b = ctx.b,
    cfg = ctx.config,
    w = ctx.weights;
  const la = cfg.linearAttention;
  if (la === null)
    throw new TraceError("bad-config", "linear-attention layer without linear-attention config", { value: layer });
  const { batch: B, tokens: T } = ctx.shape;
  const Hk = la.numKeyHeads,
    Hv = la.numValueHeads,
    Dk = la.keyHeadDim,
    Dv = la.valueHeadDim,
    N = ctx.rows;
  const keyDim = Hk * Dk,
    valueDim = Hv * Dv;
  const name = (r: Parameters<typeof w.layerName>[1]) => w.layerName(layer, r);
  const mixed = causalConv(ctx, b.reshape(linear(ctx, x, name("linQkv")), [B, T, 2 * keyDim + valueDim]), layer);
  const part = (from: number, size: number, heads: number, dim: number) =>
    b.reshape(b.slice(mixed, [0, 0, from], [B, T, from + size]), [B, T, heads, dim]);
  // Each key head serves Hv/Hk consecutive value heads (repeat_interleave).
  const heads = (t: Ref) => b.transpose(b.repeatKv(t, Hv / Hk, 2), [0, 2, 1, 3]);
  const q = b.mul(heads(l2norm(ctx, part(0, keyDim, Hk, Dk))), 1 / Math.sqrt(Dk));
  const k = heads(l2norm(ctx, part(keyDim, keyDim, Hk, Dk)));
  const v = b.transpose(part(2 * keyDim, valueDim, Hv, Dv), [0, 2, 1, 3]);
  const beta = b.transpose(b.reshape(sigmoid(ctx, linear(ctx, x, name("linB"))), [B, T, Hv]), [0, 2, 1]);
  const aLog = b.f32(ctx.weight(name("linALog"), [Hv])),
    dtBias = b.f32(ctx.weight(name("linDtBias"), [Hv]));
  const g = b.mul(b.neg(b.exp(aLog)), softplus(ctx, b.add(linear(ctx, x, name("linA")), dtBias)));
  const decay = b.transpose(b.reshape(b.exp(g), [B, T, Hv]), [0, 2, 1]);
  const st = stateOrZeros(ctx, `layers.${layer}.recurrent`, [B, Hv, Dk, Dv]);
  let S = st.value;
  const outs: Ref[] = [];
  const at = (t: Ref, i: number) => b.slice(t, [0, 0, i, 0], [B, Hv, i + 1, t.shape[3]!]);
  for (let i = 0; i < T; i++) {
    const kt = b.reshape(at(k, i), [B, Hv, Dk, 1]);
    const qt = b.reshape(at(q, i), [B, Hv, Dk, 1]);
    const vt = b.reshape(at(v, i), [B, Hv, Dv]);
    S = b.mul(S, b.reshape(b.slice(decay, [0, 0, i], [B, Hv, i + 1]), [B, Hv, 1, 1]));
    const kvMem = b.sum(b.mul(S, kt), [2]);
    const delta = b.mul(b.sub(vt, kvMem), b.slice(beta, [0, 0, i], [B, Hv, i + 1]));
    S = b.add(S, b.mul(kt, b.reshape(delta, [B, Hv, 1, Dv])));
    outs.push(b.reshape(b.sum(b.mul(S, qt), [2]), [B, Hv, 1, Dv]));
  }
  st.commit(S);
  const core = b.reshape(b.transpose(outs.length === 1 ? outs[0]! : b.concat(outs, 2), [0, 2, 1, 3]), [N * Hv, Dv]);
  const z = b.reshape(linear(ctx, x, name("linZ")), [N * Hv, Dv]);
  const normed = b.mul(rmsNorm(ctx, core, name("linNorm"), false), b.silu(z));
  return linear(ctx, b.reshape(normed, [N, valueDim]), name("linOut"));
}
