// Kernels the Vulkan tests run, written with the kernel-dsl builder: a GEMV with a shared-memory tree, a
// subgroup row reduction, bf16 unpack to f32, and an elementwise SiLU-times-gate with a scalar uniform.

import { kernel } from "@poot/kernel-dsl";

/** y[row] = Σ_k W[row, k] · x[k]: one workgroup of 64 per row, strided partial sums, shared-memory tree. */
export const gemv = kernel("vk_gemv_tree", { workgroupSize: [64, 1, 1] }, (k) => {
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

/** out[row] = max_k a[row, k]: one subgroup per row, lanes stride over k, then a subgroup max. */
export const rowMax = kernel("vk_row_max_subgroup", { workgroupSize: [64, 1, 1] }, (k) => {
  const {
    buffer,
    uniform,
    wid,
    u32,
    f32,
    var_,
    let_,
    for_,
    if_,
    subgroupMax,
    subgroupId,
    subgroupLane,
    subgroupSize,
    max,
  } = k;
  const a = buffer("a", "f32", "read");
  const out = buffer("out", "f32", "write");
  const K = uniform("k", "u32");
  const rows = uniform("rows", "u32");
  const row = let_(wid.x.mul(u32(64).div(subgroupSize)).add(subgroupId), "row");
  const acc = var_(f32(-3.0e38), "acc");
  if_(row.lt(rows), () => for_(subgroupLane, K, subgroupSize, (c) => acc.set(max(acc, a.at(row.mul(K).add(c)))), "c"));
  const m = subgroupMax(acc);
  if_(subgroupLane.eq(0).and(row.lt(rows)), () => out.set(row, m));
});

/** out[2i], out[2i+1] = the two bf16 halves of packed[i], widened to f32. */
export const bf16Unpack = kernel("vk_bf16_unpack", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_, unpack, return_ } = k;
  const packed = buffer("packed", "u32", "read");
  const out = buffer("out", "f32", "write");
  const n = uniform("n", "u32");
  const i = let_(gid.x, "i");
  if_(i.ge(n), () => return_());
  const v = let_(unpack("bf16x2", packed.at(i)), "v");
  out.set(i.mul(2), v.x);
  out.set(i.mul(2).add(1), v.y);
});

/** out[i] = silu(a[i]) · b[i] · scale, with silu(x) = x / (1 + exp(-x)). */
export const siluMul = kernel("vk_silu_mul", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, f32, let_, if_, exp } = k;
  const a = buffer("a", "f32", "read");
  const b = buffer("b", "f32", "read");
  const out = buffer("out", "f32", "write");
  const n = uniform("n", "u32");
  const scale = uniform("scale", "f32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => {
    const x = let_(a.at(i), "x");
    out.set(
      i,
      x
        .div(f32(1).add(exp(x.neg())))
        .mul(b.at(i))
        .mul(scale),
    );
  });
});

/** cache[pos, i] = x[i] · scale: a KV-cache write at the position held in a slot. */
export const cacheWrite = kernel("vk_cache_write", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_ } = k;
  const pos = buffer("pos", "i32", "read");
  const x = buffer("x", "f32", "read");
  const cache = buffer("cache", "f32", "read_write");
  const width = uniform("width", "u32");
  const scale = uniform("scale", "f32");
  const i = let_(gid.x, "i");
  if_(i.lt(width), () => cache.set(pos.at(0).u32().mul(width).add(i), x.at(i).mul(scale)));
});

/** out[i] = Σ_r cache[r, i] over `rows` rows. */
export const colSum = kernel("vk_col_sum", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, f32, let_, var_, if_, for_, u32 } = k;
  const cache = buffer("cache", "f32", "read");
  const out = buffer("out", "f32", "write");
  const width = uniform("width", "u32");
  const rows = uniform("rows", "u32");
  const i = let_(gid.x, "i");
  if_(i.lt(width), () => {
    const acc = var_(f32(0), "acc");
    for_(u32(0), rows, 1, (r) => acc.set(acc.add(cache.at(r.mul(width).add(i)))), "r");
    out.set(i, acc);
  });
});
