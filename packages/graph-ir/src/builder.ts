// Builder: the tracer API. Adds composed helpers (norms, activations, RoPE, GQA, attention, linear,
// embedding) on top of GraphBuilder; every helper emits primitives only and computes in f32.

import { isPacked } from "./dtype.js";
import { GraphError } from "./errors.js";
import { GraphBuilder, type Ref } from "./builder-core.js";

/** How attention scores are masked. */
export type AttentionMask =
  /** Added to the scaled scores (0 to keep, -inf or a large negative to drop); broadcast to [..., Tq, Tk]. */
  | { readonly additive: Ref }
  /** Bool, true = keep; dropped scores become -inf before softmax. */
  | { readonly select: Ref };

/** Options of attentionMasked. */
export interface AttentionOptions {
  /** Score scale, typically 1/sqrt(headDim). */
  readonly scale: number;
  /** Optional mask. */
  readonly mask?: AttentionMask;
}

/** The tracer API: primitives (from GraphBuilder) plus helpers that compose them. */
export class Builder extends GraphBuilder {
  /** x as f32 (a Cast only when needed). */
  f32(x: Ref): Ref {
    return x.dtype === "f32" ? x : this.cast(x, "f32");
  }

  private lastDim(x: Ref, what: string): number {
    const d = x.shape[x.shape.length - 1];
    if (d === undefined) throw new GraphError("shape-mismatch", `${what} needs a rank >= 1 input`, { values: [x.id] });
    return d;
  }

  /** RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * weight. */
  rmsNorm(x: Ref, weight: Ref, eps: number, name?: string): Ref {
    const xf = this.f32(x);
    const d = this.lastDim(xf, "rmsNorm");
    const ms = this.div(this.sum(this.mul(xf, xf), [-1], true), d);
    const inv = this.recip(this.sqrt(this.add(ms, eps)));
    return this.mul(this.mul(xf, inv), this.f32(weight), name);
  }

  /** LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * weight + bias. */
  layerNorm(x: Ref, weight: Ref, bias: Ref | undefined, eps: number, name?: string): Ref {
    const xf = this.f32(x);
    const d = this.lastDim(xf, "layerNorm");
    const mean = this.div(this.sum(xf, [-1], true), d);
    const c = this.sub(xf, mean);
    const variance = this.div(this.sum(this.mul(c, c), [-1], true), d);
    const y = this.mul(this.mul(c, this.recip(this.sqrt(this.add(variance, eps)))), this.f32(weight));
    if (bias === undefined) return name === undefined ? y : this.name(y, name);
    return this.add(y, this.f32(bias), name);
  }

  /** Max-subtracted softmax along `axis`. */
  softmax(x: Ref, axis = -1, name?: string): Ref {
    const xf = this.f32(x);
    const m = this.reduce("max", xf, [axis], true);
    const e = this.exp(this.sub(xf, m));
    return this.div(e, this.sum(e, [axis], true), name);
  }

  /** silu(x) = x / (1 + e^-x). */
  silu(x: Ref, name?: string): Ref {
    const xf = this.f32(x);
    return this.div(xf, this.add(this.exp(this.neg(xf)), 1), name);
  }

  /** GELU: exact erf form, or the tanh approximation. */
  gelu(x: Ref, approximate: "erf" | "tanh" = "erf", name?: string): Ref {
    const xf = this.f32(x);
    const inner =
      approximate === "erf"
        ? this.erf(this.mul(xf, Math.SQRT1_2))
        : this.tanh(this.mul(this.add(xf, this.mul(this.mul(this.mul(xf, xf), xf), 0.044715)), Math.sqrt(2 / Math.PI)));
    return this.mul(this.mul(xf, 0.5), this.add(inner, 1), name);
  }

  /** SwiGLU: silu(gate) * up. */
  swiglu(gate: Ref, up: Ref, name?: string): Ref {
    return this.mul(this.silu(gate), this.f32(up), name);
  }

  /** GeGLU: gelu(gate) * up. */
  geglu(gate: Ref, up: Ref, approximate: "erf" | "tanh" = "tanh", name?: string): Ref {
    return this.mul(this.gelu(gate, approximate), this.f32(up), name);
  }

  /** Rotate-half RoPE: x * cos + concat(-x2, x1) * sin, halves of the last axis; cos/sin broadcast to x. */
  ropeRotateHalf(x: Ref, cos: Ref, sin: Ref, name?: string): Ref {
    const xf = this.f32(x);
    const d = this.lastDim(xf, "ropeRotateHalf");
    if (d % 2 !== 0)
      throw new GraphError("shape-mismatch", `ropeRotateHalf needs an even last dim, got ${d}`, { values: [x.id] });
    const r = xf.shape.length;
    const lo = xf.shape.map(() => 0),
      hi = [...xf.shape];
    const x1 = this.slice(xf, lo, [...hi.slice(0, r - 1), d / 2]);
    const x2 = this.slice(xf, [...lo.slice(0, r - 1), d / 2], hi);
    const rot = this.concat([this.neg(x2), x1], -1);
    return this.add(this.mul(xf, this.f32(cos)), this.mul(rot, this.f32(sin)), name);
  }

  /**
   * Interleaved (GPT-J, llama.cpp "normal") RoPE: element pairs (2i, 2i+1) of the last axis rotate together,
   * x * cos + rot(x) * sin with rot(x)[2i] = -x[2i+1], rot(x)[2i+1] = x[2i]; cos/sin broadcast to x and hold
   * pair i's angle at both 2i and 2i+1.
   */
  ropeInterleaved(x: Ref, cos: Ref, sin: Ref, name?: string): Ref {
    const xf = this.f32(x);
    const d = this.lastDim(xf, "ropeInterleaved");
    if (d % 2 !== 0)
      throw new GraphError("shape-mismatch", `ropeInterleaved needs an even last dim, got ${d}`, { values: [x.id] });
    const r = xf.shape.length;
    const pairs = this.reshape(xf, [...xf.shape.slice(0, r - 1), d / 2, 2]);
    const lo = pairs.shape.map(() => 0),
      hi = [...pairs.shape];
    const even = this.slice(pairs, lo, [...hi.slice(0, r), 1]);
    const odd = this.slice(pairs, [...lo.slice(0, r), 1], hi);
    const rot = this.reshape(this.concat([this.neg(odd), even], -1), xf.shape);
    return this.add(this.mul(xf, this.f32(cos)), this.mul(rot, this.f32(sin)), name);
  }

  /** Repeats each KV head `nRep` times along `axis` (GQA): [.., Hkv, ..] -> [.., Hkv * nRep, ..]. */
  repeatKv(x: Ref, nRep: number, axis = 1, name?: string): Ref {
    if (nRep === 1) return x;
    const r = x.shape.length;
    const a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r)
      throw new GraphError("bad-axis", `repeatKv axis ${axis} out of range for rank ${r}`, { values: [x.id] });
    const s = x.shape;
    const expanded = this.reshape(x, [...s.slice(0, a + 1), 1, ...s.slice(a + 1)]);
    const b = this.broadcast(expanded, [...s.slice(0, a + 1), nRep, ...s.slice(a + 1)]);
    return this.reshape(b, [...s.slice(0, a), s[a]! * nRep, ...s.slice(a + 1)], name);
  }

  /** softmax(q @ k^T * scale (+ mask)) @ v with q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv]. */
  attentionMasked(q: Ref, k: Ref, v: Ref, options: AttentionOptions, name?: string): Ref {
    const qf = this.f32(q),
      kf = this.f32(k),
      vf = this.f32(v);
    const r = kf.shape.length;
    if (r < 2) throw new GraphError("shape-mismatch", "attention needs rank >= 2 keys", { values: [k.id] });
    const perm = kf.shape.map((_, i) => i);
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    let scores = this.mul(this.matmul(qf, this.transpose(kf, perm)), options.scale);
    const m = options.mask;
    if (m !== undefined)
      scores = "additive" in m ? this.add(scores, this.f32(m.additive)) : this.select(m.select, scores, -Infinity);
    return this.matmul(this.softmax(scores, -1), vf, name);
  }

  /** x @ W^T (+ bias) for an HF-layout [N, K] weight, dense or packed (decoded with DecodePacked). */
  linear(x: Ref, weight: Ref, bias?: Ref, name?: string): Ref {
    if (weight.shape.length !== 2)
      throw new GraphError("shape-mismatch", `linear weight must be [N, K], got rank ${weight.shape.length}`, {
        values: [weight.id],
      });
    const w = isPacked(weight.dtype) ? this.decodePacked(weight) : this.f32(weight);
    const xf = this.f32(x);
    const x2 = xf.shape.length === 1 ? this.reshape(xf, [1, xf.shape[0]!]) : xf;
    let y = this.matmul(x2, this.transpose(w, [1, 0]));
    if (xf.shape.length === 1) y = this.reshape(y, [weight.shape[0]!]);
    return bias === undefined ? (name === undefined ? y : this.name(y, name)) : this.add(y, this.f32(bias), name);
  }

  /** Embedding lookup: rows of a [V, D] table (dense or packed) at i32 ids, as f32. */
  embedding(table: Ref, ids: Ref, name?: string): Ref {
    const rows = this.gather(table, ids, 0);
    const y = isPacked(table.dtype) ? this.decodePacked(rows) : this.f32(rows);
    return name === undefined ? y : this.name(y, name);
  }
}
