// Real kernels used by the codegen tests, written with the @poot/kernel-dsl builder: GEMV with a shared-memory
// tree reduction, a subgroup row sum, bf16 unpack/pack, an elementwise kernel with many inputs, atomics.

import { kernel, type Kernel } from "@poot/kernel-dsl";

/** y[row] = Σ_k W[row, k] · x[k]; one workgroup of 64 per row, strided partial sums, shared-memory tree. */
export const gemv = kernel("gemv_tree", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, shared, lid, wid, f32, u32, var_, let_, for_, while_, if_, barrier, fma } = k;
  const w = buffer("w", "f32", "read");
  const x = buffer("x", "f32", "read");
  const y = buffer("y", "f32", "write");
  const K = uniform("k", "u32");
  const partial = shared("partial", "f32", 64);
  const row = let_(wid.x, "row");
  const t = let_(lid.x, "t");
  const acc = var_(f32(0), "acc");
  for_(t, K, 64, (c) => acc.set(fma(w.at(row.mul(K).add(c)), x.at(c), acc)), "c");
  partial.set(t, acc);
  barrier();
  const half = var_(u32(32), "half");
  while_(half.gt(0), () => {
    if_(t.lt(half), () => partial.set(t, partial.at(t).add(partial.at(t.add(half)))));
    barrier();
    half.set(half.shr(1));
  });
  if_(t.eq(0), () => y.set(row, partial.at(0)));
});

/** out[row] = Σ_k a[row, k]: one subgroup per row, lanes stride over k, then a subgroup reduction. */
export const rowSum = kernel("row_sum_subgroup", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, wid, u32, f32, var_, let_, for_, if_, subgroupAdd, subgroupId, subgroupLane, subgroupSize } =
    k;
  const a = buffer("a", "f32", "read");
  const out = buffer("out", "f32", "write");
  const K = uniform("k", "u32");
  const rows = uniform("rows", "u32");
  const row = let_(wid.x.mul(u32(64).div(subgroupSize)).add(subgroupId), "row");
  const acc = var_(f32(0), "acc");
  if_(row.lt(rows), () => for_(subgroupLane, K, subgroupSize, (c) => acc.set(acc.add(a.at(row.mul(K).add(c)))), "c"));
  const total = subgroupAdd(acc);
  if_(subgroupLane.eq(0).and(row.lt(rows)), () => out.set(row, total));
});

/** bf16 in both forms: packed pairs in u32 words (unpack, scale, pack) and a bf16 buffer (widen, scale, narrow). */
export const bf16Scale = kernel("bf16_scale", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_, unpack, pack, vec, return_ } = k;
  const pairsIn = buffer("pairs_in", "u32", "read");
  const pairsOut = buffer("pairs_out", "u32", "write");
  const hIn = buffer("h_in", "bf16", "read");
  const hOut = buffer("h_out", "bf16", "write");
  const n = uniform("n", "u32");
  const alpha = uniform("alpha", "f32");
  const i = let_(gid.x, "gi");
  if_(i.ge(n), () => return_());
  const v = let_(unpack("bf16x2", pairsIn.at(i)), "v");
  pairsOut.set(i, pack("bf16x2", vec("vec2<f32>", v.x.mul(alpha), v.y.mul(alpha))));
  hOut.set(i, hIn.at(i).mul(alpha));
});

/** Number of inputs of {@link manyInputs}. */
export const MANY = 10;

/** out[i] = (Σ_j (j+1) · in_j[i]) · exp(-|in_0[i]|): ten read-only inputs, more than small devices bind. */
export const manyInputs = kernel("ew_many_inputs", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, f32, let_, var_, if_, exp, abs } = k;
  const ins = Array.from({ length: MANY }, (_, j) => buffer(`in${j}`, "f32", "read"));
  const out = buffer("out", "f32", "write");
  const n = uniform("n", "u32");
  const i = let_(gid.x, "gi");
  if_(i.lt(n), () => {
    const acc = var_(f32(0), "acc");
    ins.forEach((b, j) => acc.set(acc.add(b.at(i).mul(j + 1))));
    out.set(i, acc.mul(exp(abs(ins[0]!.at(i)).neg())));
  });
});

/** A histogram (shared-memory u32 atomics flushed with global atomics) plus a global f32 atomic sum. */
export const atomics = kernel("histogram_atomics", { workgroupSize: [64, 1, 1], specs: { BINS: 16 } }, (k) => {
  const { buffer, uniform, shared, spec, gid, lid, u32, let_, if_, barrier } = k;
  const vals = buffer("vals", "u32", "read");
  const hist = buffer("hist", "u32", "read_write", { atomic: true });
  const total = buffer("total", "f32", "read_write", { atomic: true });
  const n = uniform("n", "u32");
  const BINS = spec("BINS");
  const local = shared("local_hist", "u32", { spec: "BINS" }, { atomic: true });
  const t = let_(lid.x, "t");
  if_(t.lt(BINS), () => local.atomicStore(t, u32(0)));
  barrier();
  const i = let_(gid.x, "gi");
  if_(i.lt(n), () => {
    const v = vals.at(i);
    local.atomicAdd(v.rem(BINS), u32(1));
    total.atomicAdd(u32(0), v.f32());
  });
  barrier();
  if_(t.lt(BINS), () => {
    const c = local.atomicLoad(t);
    hist.atomicAdd(t, c);
  });
});

/** out[i] = in[i] · s + (x, y, z, w)[i] as vec4<f32>: vector loads, vector math, lane extraction. */
export const vec4Affine = kernel("vec4_affine", { workgroupSize: [32, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_, vec } = k;
  const src = buffer("src", "vec4<f32>", "read");
  const dst = buffer("dst", "vec4<f32>", "write");
  const lane0 = buffer("lane0", "f32", "write");
  const n = uniform("n", "u32");
  const s = uniform("s", "f32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => {
    const v = src.at(i);
    const r = let_(v.mul(vec("vec4<f32>", s, s, s, s)).add(vec("vec4<f32>", v.w, v.z, v.y, v.x)), "r");
    dst.set(i, r);
    lane0.set(i, r.x.sub(r.w));
  });
});

/** All test kernels. */
export const ALL_KERNELS: readonly Kernel[] = [gemv, rowSum, bf16Scale, manyInputs, atomics, vec4Affine];
