// Interpreter unit tests: divergence and launch errors, subgroup shuffles, integer/float semantics, vectors,
// private arrays, narrow storage types and atomics, each against values worked out by hand.

import { describe, expect, it } from "vitest";
import { kernel } from "./dsl.js";
import { KernelRuntimeError } from "./errors.js";
import { interpret } from "./interp.js";

const run1 = (
  k: Parameters<typeof interpret>[0],
  buffers: Parameters<typeof interpret>[1]["buffers"],
  extra: Partial<Parameters<typeof interpret>[1]> = {},
): void => interpret(k, { grid: [1], buffers, ...extra });

describe("interpret: synchronization errors", () => {
  it("reports a barrier reached by only some threads", () => {
    const k = kernel("half_barrier", { workgroupSize: [8, 1, 1] }, ({ lid, if_, barrier, buffer }) => {
      buffer("o", "u32", "write");
      if_(lid.x.lt(4), () => barrier());
    });
    expect(() => run1(k, { o: new Uint32Array(1) })).toThrow(
      expect.objectContaining({ code: "barrier_divergence", kernel: "half_barrier" }),
    );
  });

  it("reports a subgroup op reached by only some lanes", () => {
    const k = kernel("half_sg", { workgroupSize: [8, 1, 1] }, ({ lid, if_, subgroupAdd, buffer }) => {
      const o = buffer("o", "u32", "write");
      if_(lid.x.lt(4), () => o.set(lid.x, subgroupAdd(lid.x)));
    });
    expect(() => run1(k, { o: new Uint32Array(8) }, { subgroupSize: 8 })).toThrow(
      expect.objectContaining({ code: "subgroup_divergence" }),
    );
  });

  it("does not report a race for disjoint writes, nor when a barrier separates write and read", () => {
    const k = kernel("neighbors", { workgroupSize: [16, 1, 1] }, ({ lid, shared, buffer, barrier }) => {
      const s = shared("s", "u32", 16);
      const o = buffer("o", "u32", "write");
      s.set(lid.x, lid.x.mul(3));
      barrier();
      o.set(lid.x, s.at(lid.x.add(1).rem(16)));
    });
    const o = new Uint32Array(16);
    run1(k, { o });
    expect(Array.from(o)).toEqual(Array.from({ length: 16 }, (_, i) => ((i + 1) % 16) * 3));
  });

  it("reports a write-write race on workgroup memory", () => {
    const k = kernel("ww", { workgroupSize: [4, 1, 1] }, ({ lid, shared }) => {
      shared("s", "u32", 1).set(0, lid.x);
    });
    expect(() => run1(k, {})).toThrow(
      expect.objectContaining({
        code: "race",
        detail: expect.objectContaining({ array: "s", index: 0, threads: [0, 1] }),
      }),
    );
  });
});

describe("interpret: subgroup ops", () => {
  it("shuffle_xor, shuffle_idx, broadcast, reduce max/min per subgroup", () => {
    const k = kernel(
      "sg_ops",
      { workgroupSize: [16, 1, 1] },
      ({ lid, subgroupLane, buffer, shuffleXor, shuffle, broadcast, subgroupMax, subgroupMin, u32 }) => {
        const o = buffer("o", "u32", "write");
        const v = lid.x.mul(lid.x);
        o.set(lid.x.mul(5), shuffleXor(v, 1));
        o.set(lid.x.mul(5).add(1), shuffle(v, subgroupLane.add(1).rem(4)));
        o.set(lid.x.mul(5).add(2), broadcast(v, u32(2)));
        o.set(lid.x.mul(5).add(3), subgroupMax(v));
        o.set(lid.x.mul(5).add(4), subgroupMin(v));
      },
    );
    const o = new Uint32Array(80);
    run1(k, { o }, { subgroupSize: 4 });
    for (let t = 0; t < 16; t++) {
      const g = t - (t % 4);
      const sq = (x: number): number => x * x;
      expect(Array.from(o.subarray(t * 5, t * 5 + 5))).toEqual([
        sq(t ^ 1),
        sq(g + (((t % 4) + 1) % 4)),
        sq(g + 2),
        sq(g + 3),
        sq(g),
      ]);
    }
  });
});

describe("interpret: arithmetic semantics", () => {
  it("wraps integers, truncates division, saturates f32 -> int casts, bitcasts exactly", () => {
    const k = kernel("arith", { workgroupSize: [1, 1, 1] }, ({ buffer, u32, i32, f32 }) => {
      const o = buffer("o", "u32", "write");
      const s = buffer("s", "i32", "write");
      o.set(0, u32(0xffffffff).add(2));
      o.set(1, u32(0x10000).mul(u32(0x10001)));
      o.set(2, u32(7).div(2));
      o.set(3, u32(1).shl(33));
      o.set(4, f32(-3.5).u32());
      o.set(5, f32(1e20).u32());
      o.set(6, f32(1).bitcast("u32"));
      s.set(0, i32(-7).div(2));
      s.set(1, i32(-7).rem(2));
      s.set(2, i32(-8).shr(1));
      s.set(3, i32(0x7fffffff).add(1));
      s.set(4, f32(NaN).i32());
      s.set(5, u32(0xffffffff).i32());
    });
    const o = new Uint32Array(7);
    const s = new Int32Array(6);
    run1(k, { o, s });
    expect(Array.from(o)).toEqual([1, 0x10000, 3, 2, 0, 0xffffffff, 0x3f800000]);
    expect(Array.from(s)).toEqual([-3, -1, -4, -2147483648, 0, -1]);
  });

  it("reports integer division by zero", () => {
    const k = kernel("divz", { workgroupSize: [1, 1, 1] }, ({ buffer, uniform }) => {
      buffer("o", "u32", "write").set(0, uniform("a", "u32").div(uniform("b", "u32")));
    });
    expect(() => run1(k, { o: new Uint32Array(1) }, { uniforms: { a: 1, b: 0 } })).toThrow(
      expect.objectContaining({ code: "division_by_zero" }),
    );
  });

  it("runs vec4 loads, private arrays, while with a loading condition, continue and cmpxchg", () => {
    const k = kernel("misc", { workgroupSize: [1, 1, 1] }, (b) => {
      const { buffer, privateArray, var_, for_, while_, if_, continue_, u32, f32 } = b;
      const v = buffer("v", "vec4<f32>", "read");
      const stop = buffer("stop", "u32", "read");
      const o = buffer("o", "f32", "write");
      const c = buffer("c", "u32", "read_write", { atomic: true });
      const p = privateArray("p", "f32", 4);
      const q = v.at(1);
      p.set(0, q.x.add(q.w));
      const i = var_(u32(0), "i");
      while_(
        () => stop.at(i).eq(0),
        () => i.set(i.add(1)),
      );
      const acc = var_(f32(0), "acc");
      for_(u32(0), 6, 1, (j) => {
        if_(j.rem(2).eq(1), () => continue_());
        acc.set(acc.add(j.f32()));
      });
      o.set(0, p.at(0));
      o.set(1, i.f32());
      o.set(2, acc);
      const old = c.atomicCmpxchg(0, u32(5), u32(9));
      o.set(3, old.f32());
      c.atomicCmpxchg(1, u32(5), u32(9));
    });
    const o = new Float32Array(4).fill(NaN);
    const c = Uint32Array.from([5, 6]);
    run1(k, { v: Float32Array.from([0, 0, 0, 0, 1.5, 2, 3, 4.25]), stop: Uint32Array.from([0, 0, 0, 1]), o, c });
    expect(Array.from(o)).toEqual([5.75, 3, 6, 5]);
    expect(Array.from(c)).toEqual([9, 6]);
  });

  it("narrows u8 / i8 / f16 stores and widens their loads", () => {
    const k = kernel("narrow", { workgroupSize: [1, 1, 1] }, ({ buffer, u32, i32, f32 }) => {
      const a = buffer("a", "u8", "read_write");
      const b = buffer("b", "i8", "write");
      const h = buffer("h", "f16", "read_write");
      a.set(1, a.at(0).add(u32(300)));
      b.set(0, i32(200));
      h.set(1, h.at(0).mul(f32(3)));
      h.set(2, f32(70000));
      h.set(3, f32(1 + 2 ** -11));
      h.set(4, f32(2 ** -24 * 1.5));
    });
    const a = Uint8Array.from([10, 0]);
    const b = new Int8Array(1);
    const h = Uint16Array.from([0x3c00, 0, 0, 0, 0]);
    run1(k, { a, b, h });
    expect(Array.from(a)).toEqual([10, 310 - 256]);
    expect(Array.from(b)).toEqual([200 - 256]);
    // 3.0 = 0x4200; 70000 overflows to +inf 0x7c00; 1 + 2^-11 is a tie -> even (1.0 = 0x3c00); 1.5 * 2^-24 ties -> 2 * 2^-24.
    expect(Array.from(h)).toEqual([0x3c00, 0x4200, 0x7c00, 0x3c00, 0x0002]);
  });

  it("rejects a launch with a wrong buffer class or a missing uniform", () => {
    const k = kernel("launch", { workgroupSize: [1, 1, 1] }, ({ buffer, uniform }) => {
      buffer("o", "f32", "write").set(0, uniform("x", "f32"));
    });
    expect(() => run1(k, { o: new Float64Array(1) as unknown as Float32Array }, { uniforms: { x: 1 } })).toThrow(
      KernelRuntimeError,
    );
    expect(() => run1(k, { o: new Float32Array(1) })).toThrow(expect.objectContaining({ code: "bad_launch" }));
  });

  it("atomic max/min on i32 and add on f32 across workgroups", () => {
    const k = kernel("atom", { workgroupSize: [8, 1, 1] }, ({ buffer, gid }) => {
      const m = buffer("m", "i32", "read_write", { atomic: true });
      const f = buffer("f", "f32", "read_write", { atomic: true });
      const v = gid.x.i32().sub(10);
      m.atomicMax(0, v);
      m.atomicMin(1, v);
      f.atomicAdd(0, gid.x.f32().mul(0.5));
    });
    const m = Int32Array.from([-100, 100]);
    const f = new Float32Array(1);
    interpret(k, { grid: [3], buffers: { m, f } });
    expect(Array.from(m)).toEqual([13, -10]);
    expect(f[0]).toBe((23 * 24) / 4);
  });
});
