// Kernels that exercise the IR constructs the main test kernels leave out: math intrinsics, casts with
// saturation, bit ops, private arrays, break/continue, 2-D workgroups, f16/u8/i8 storage, more atomics, subgroups,
// non-finite constants.

import { kernel, type Kernel } from "@poot/kernel-dsl";

/** Scalar ops over a 2-D (8×2) workgroup; every output element written by exactly one thread. */
export const scalarOps = kernel("scalar_ops", { workgroupSize: [8, 2, 1] }, (k) => {
  const {
    buffer,
    wid,
    nwg,
    wgSize,
    localIndex,
    u32,
    i32,
    f32,
    let_,
    var_,
    for_,
    while_,
    if_,
    break_,
    continue_,
    privateArray,
  } = k;
  const { log, sqrt, rsqrt, tanh, erf, sin, cos, floor, abs, min, max, select, fma } = k;
  const fin = buffer("fin", "f32", "read");
  const iin = buffer("iin", "i32", "read");
  const uin = buffer("uin", "u32", "read");
  const fout = buffer("fout", "f32", "write");
  const iout = buffer("iout", "i32", "write");
  const uout = buffer("uout", "u32", "write");
  const gi = let_(wid.x.mul(wgSize.x.mul(wgSize.y)).add(localIndex), "gi");
  const x = let_(fin.at(gi), "x");
  const a = let_(iin.at(gi), "a");
  const b = let_(uin.at(gi), "b");
  fout.set(
    gi.mul(5),
    log(abs(x).add(1))
      .add(sqrt(abs(x)))
      .add(rsqrt(abs(x).add(0.5))),
  );
  fout.set(gi.mul(5).add(1), tanh(x).add(erf(x)));
  fout.set(
    gi.mul(5).add(2),
    sin(x)
      .add(cos(x))
      .add(floor(x.mul(3))),
  );
  fout.set(
    gi.mul(5).add(3),
    select(x.gt(0), min(x, f32(0.25)), max(x, f32(-0.25)))
      .add(x.rem(0.3))
      .add(fma(x, x, f32(-1))),
  );
  // A private array filled in a loop, then summed with continue and break.
  const arr = privateArray("arr", "f32", 6);
  for_(u32(0), 6, 1, (j) => arr.set(j, x.mul(j.f32()).add(arr.at(j))), "j");
  const s = var_(f32(0), "s");
  const j2 = var_(u32(0), "j2");
  while_(j2.lt(100), () => {
    if_(j2.ge(5), () => break_());
    j2.set(j2.add(1));
    if_(j2.eq(2), () => continue_());
    s.set(s.add(arr.at(j2)));
  });
  fout.set(gi.mul(5).add(4), s);
  iout.set(gi.mul(3), x.mul(3e9).i32()); // saturates
  iout.set(gi.mul(3).add(1), a.shl(3).shr(1).xor(a.rem(7)).sub(a.div(3)).add(a.not()));
  iout.set(
    gi.mul(3).add(2),
    min(a, i32(5))
      .add(max(a, i32(-5)))
      .add(abs(a))
      .neg(),
  );
  uout.set(gi.mul(4), x.bitcast("u32"));
  uout.set(gi.mul(4).add(1), b.shr(5).or(b.shl(27)).add(b.div(7)).add(b.rem(11)));
  uout.set(gi.mul(4).add(2), x.mul(-1e3).u32().add(nwg.x).add(wgSize.y)); // negative saturates to 0
  uout.set(
    gi.mul(4).add(3),
    select(a.lt(0).and(b.gt(100)), u32(1), u32(2))
      .add(x.ne(x).u32())
      .add(a.bitcast("u32").shr(31)),
  );
});

/** Narrow storage: f16, u8 and i8 loads and stores, f16 pack/unpack, vec2 math. */
export const narrow = kernel("narrow_storage", { workgroupSize: [16, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_, vec, pack, unpack } = k;
  const h = buffer("h", "f16", "read");
  const hOut = buffer("h_out", "f16", "write");
  const bytes = buffer("bytes", "u8", "read");
  const sbytes = buffer("sbytes", "i8", "read");
  const bOut = buffer("b_out", "u8", "write");
  const sOut = buffer("s_out", "i8", "write");
  const pairs = buffer("pairs", "u32", "write");
  const n = uniform("n", "u32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => {
    const v = let_(h.at(i), "v");
    hOut.set(i, v.mul(-2.5));
    bOut.set(i, bytes.at(i).add(sbytes.at(i).bitcast("u32")));
    sOut.set(i, sbytes.at(i).mul(-3));
    const p = let_(unpack("f16x2", pack("f16x2", vec("vec2<f32>", v, v.mul(3)))), "p");
    const q = let_(p.add(vec("vec2<f32>", p.y, p.x)), "q");
    pairs.set(i, pack("f16x2", q).xor(pack("f16", q.x)));
  });
});

/** The other atomics on global u32/i32: exchange, cmpxchg, max, min. */
export const moreAtomics = kernel("more_atomics", { workgroupSize: [32, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_ } = k;
  const vals = buffer("vals", "i32", "read");
  const imax = buffer("imax", "i32", "read_write", { atomic: true });
  const umin = buffer("umin", "u32", "read_write", { atomic: true });
  const slot = buffer("slot", "u32", "read_write", { atomic: true });
  const n = uniform("n", "u32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => {
    const v = vals.at(i);
    imax.atomicMax(0, v);
    umin.atomicMin(0, v.bitcast("u32"));
    // One thread wins slot[1] (0 -> 7); slot[2] ends as 9 whoever swaps last; slot[0] counts winners.
    const old = slot.atomicCmpxchg(1, 0, 7);
    if_(old.eq(0), () => slot.atomicAdd(0, 1));
    slot.atomicExchange(2, 9);
  });
});

/** Subgroup shuffles, broadcast and min/max reductions (run where the subgroup size is fixed). */
export const subgroupOps = kernel("subgroup_ops", { workgroupSize: [32, 1, 1] }, (k) => {
  const { buffer, gid, subgroupLane, subgroupSize, let_, shuffleXor, broadcast, shuffle, subgroupMax, subgroupMin } = k;
  const src = buffer("src", "f32", "read");
  const out = buffer("out", "f32", "write");
  const i = let_(gid.x, "i");
  const v = let_(src.at(i), "v");
  const x1 = shuffleXor(v, 1);
  const b0 = broadcast(v, 0);
  const rot = shuffle(v, subgroupLane.add(1).rem(subgroupSize));
  const mx = subgroupMax(v);
  const mn = subgroupMin(v.i32());
  out.set(i, x1.add(b0.mul(10)).add(rot.mul(100)).add(mx.mul(1000)).add(mn.f32()));
});

/** Non-finite constants: -inf and +inf start a running max and min (as attention's row max does), NaN is stored. */
export const nonFinite = kernel("non_finite", { workgroupSize: [16, 1, 1] }, (k) => {
  const { buffer, gid, let_, var_, f32, max, min } = k;
  const src = buffer("src", "f32", "read");
  const out = buffer("out", "f32", "write");
  const i = let_(gid.x, "i");
  const x = let_(src.at(i), "x");
  const hi = var_(f32(-Infinity), "hi");
  hi.set(max(hi, x));
  const lo = var_(f32(Infinity), "lo");
  lo.set(min(lo, x));
  out.set(i.mul(4), hi);
  out.set(i.mul(4).add(1), lo);
  out.set(i.mul(4).add(2), f32(-Infinity).add(x));
  out.set(i.mul(4).add(3), f32(NaN));
});

/** The coverage kernels. */
export const COVERAGE_KERNELS: readonly Kernel[] = [scalarOps, narrow, moreAtomics, subgroupOps, nonFinite];
