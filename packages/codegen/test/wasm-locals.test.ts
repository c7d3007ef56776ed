// Wasm locals are reused once their value is dead (decision 2490): a kernel needs locals for what is live at once, not
// one per `let`, so no kernel passes V8's 50,000 locals per function; the reuse keeps every result equal to the
// kernel-dsl interpreter's (splatted shift counts, aliased lets, variables declared in loops and branches).

import { describe, expect, test } from "vitest";
import { lowerWasm } from "@poot/codegen";
import { interpret, kernel } from "@poot/kernel-dsl";
import type { Expr, Kernel, KernelBuffer, Stmt } from "@poot/kernel-dsl";
import { WASM_CAPS } from "./helpers.js";
import { runWasm } from "./wasm-runner.js";

/** The locals (beyond parameters) the kernel's one function declares, read from the binary's code section. */
function localCount(binary: Uint8Array): number {
  const at = { p: 8 };
  const leb = (): number => {
    let r = 0,
      s = 0,
      x: number;
    do {
      x = binary[at.p++]!;
      r += (x & 0x7f) * 2 ** s;
      s += 7;
    } while (x & 0x80);
    return r;
  };
  while (at.p < binary.length) {
    const id = binary[at.p++]!;
    const size = leb();
    const end = at.p + size;
    if (id === 10) {
      leb(); // one function
      leb(); // its body size
      let n = 0;
      for (let groups = leb(); groups > 0; groups--) n += leb() + 0 * binary[at.p++]!;
      return n;
    }
    at.p = end;
  }
  throw new Error("no code section");
}

/** Runs `k` on the Wasm target and in the interpreter on the same inputs; returns both sets of buffers. */
function both(k: Kernel, make: () => Record<string, KernelBuffer>) {
  const ref = make();
  const got = make();
  interpret(k, { grid: [1, 1, 1], buffers: ref, uniforms: {}, subgroupSize: 1 });
  const code = lowerWasm(k, WASM_CAPS);
  runWasm(code, { grid: [1, 1, 1], buffers: got, uniforms: {}, uniformTypes: {} });
  return { ref, got, locals: localCount(code.binary!) };
}

const T = 4; // threads of the one workgroup

/**
 * `n` lets in a chain, each used once by the next: one or two live at a time. The statements are written as IR (the
 * builder's name bookkeeping grows with the kernel; 60,000 lets through it take minutes).
 */
const chain = (n: number): Kernel => {
  const k = kernel(`chain_${n}`, { workgroupSize: [T, 1, 1] }, (b) => {
    const x = b.buffer("x", "f32", "read");
    b.buffer("y", "f32", "write").set(b.lid.x, x.at(b.lid.x));
  });
  const store = k.body.at(-1) as Extract<Stmt, { s: "store" }>;
  const local = (name: string): Expr => ({ k: "local", type: "f32", name });
  const f32 = (value: number): Expr => ({ k: "const", type: "f32", value: Math.fround(value) });
  const body: Stmt[] = [...k.body.slice(0, -1), { s: "let", name: "c0", type: "f32", value: store.value }];
  for (let i = 1; i <= n; i++) {
    const scaled: Expr = { k: "binary", type: "f32", op: "mul", a: local(`c${i - 1}`), b: f32(1.0001) };
    const value: Expr = { k: "binary", type: "f32", op: "add", a: scaled, b: f32(i % 7 === 0 ? -0.5 : 0.25) };
    body.push({ s: "let", name: `c${i}`, type: "f32", value });
  }
  body.push({ ...store, value: local(`c${n}`) });
  return { ...k, body };
};

/** `n` lets all read by the last statement: every one is live at once. */
const fan = (n: number): Kernel =>
  kernel(`fan_${n}`, { workgroupSize: [T, 1, 1] }, (b) => {
    const x = b.buffer("x", "f32", "read");
    const y = b.buffer("y", "f32", "write");
    const vs = Array.from({ length: n }, (_, i) => b.let_(x.at(b.lid.x).mul(b.f32(i + 1)), "v"));
    y.set(
      b.lid.x,
      vs.reduce((a, v) => a.add(v)),
    );
  });

const floats = () => ({
  x: Float32Array.from({ length: T }, (_, i) => 0.5 + i / 3),
  y: new Float32Array(T).fill(NaN),
});

describe("Wasm locals are reused once dead", () => {
  test("60,000 chained lets compile in V8 with a handful of locals and match the interpreter", () => {
    const { ref, got, locals } = both(chain(60_000), floats);
    expect(locals).toBeLessThan(32);
    expect(Array.from(got["y"]!)).toEqual(Array.from(ref["y"]!));
  });

  test("planted: 300 lets live at once need 300 locals (the count reads the binary, not the allocator)", () => {
    const { ref, got, locals } = both(fan(300), floats);
    expect(locals).toBeGreaterThanOrEqual(300);
    expect(Array.from(got["y"]!)).toEqual(Array.from(ref["y"]!));
  });

  test("reuse keeps splatted shift counts, aliased lets, and variables of loops and branches", () => {
    const k = kernel("reuse_mix", { workgroupSize: [T, 1, 1] }, (b) => {
      const { let_, var_, vec, u32, lid, for_, if_ } = b;
      const w = b.buffer("w", "u32", "read");
      const o = b.buffer("o", "vec4<u32>", "write");
      const s = b.buffer("s", "u32", "write");
      // The splat's scalar is a let whose last use is the splat: the shift must still read it.
      const sh = let_(w.at(lid.x).and(u32(7)), "sh");
      const count = let_(vec("vec4<u32>", sh, sh, sh, sh), "count");
      const fill = let_(u32(0x55)); // temporaries of later statements reuse what the scalar freed
      const word = let_(w.at(lid.x.add(1)).xor(fill), "word");
      const alias = let_(word, "alias"); // the same local as `word`
      o.set(lid.x, vec("vec4<u32>", word, alias, fill, sh).shr(count));
      const acc = var_(u32(0), "acc");
      for_(
        u32(0),
        5,
        1,
        (i) => {
          const inner = var_(i.mul(3), "inner");
          if_(
            i.and(1).eq(1),
            () => {
              const t = let_(inner.add(word), "t");
              inner.set(t.xor(acc));
            },
            () => {
              const e = let_(alias.shl(i), "e");
              inner.set(inner.add(e));
            },
          );
          acc.set(acc.add(inner));
        },
        "i",
      );
      s.set(lid.x, acc.add(alias));
    });
    const make = () => ({
      w: Uint32Array.from({ length: T + 1 }, (_, i) => (0x9e3779b9 * (i + 1)) >>> 0),
      o: new Uint32Array(4 * T),
      s: new Uint32Array(T),
    });
    const { ref, got } = both(k, make);
    expect(Array.from(got["o"]!)).toEqual(Array.from(ref["o"]!));
    expect(Array.from(got["s"]!)).toEqual(Array.from(ref["s"]!));
  });
});
