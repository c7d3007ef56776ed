// The native kernel library as one LLVM module: the x86 kernels' functions, plus the entry points the loader calls
// (the instruction set this CPU runs, the library's source hash, a buffer's address). Deterministic text: the
// shared object llc + ld.lld make from it is byte for byte reproducible (decision 2300).

import type { TargetCode } from "../caps.js";
import { CodegenError } from "../errors.js";
import { X86_TRIPLE } from "./target.js";

/** The instruction-set level the kernels are compiled for (AVX2, FMA, F16C, BMI2: `-mcpu=x86-64-v3`). */
export const X86_KERNEL_CPU = "x86-64-v3";

/** The level of the AVX-512 kernel set (AVX-512 F, BW, CD, DQ, VL on top of x86-64-v3), decision 2310. */
export const X86_WIDE_KERNEL_CPU = "x86-64-v4";

/**
 * What kernels using the 8-bit integer dot product (`dot4U8I8`, decision 2320) are compiled for: x86-64-v4 (AVX-512
 * F/BW/DQ/VL, 32 vector registers) with AVX-512 VNNI; `poot_native_vnni()` says whether this CPU runs them.
 */
export const X86_VNNI_CPU = "x86-64-v4";

/** An LLVM IR string constant's body (`c"..."`). */
function cString(s: string): string {
  return [...Buffer.from(`${s}\0`, "utf8")]
    .map((c) =>
      c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c
        ? String.fromCharCode(c)
        : `\\${c.toString(16).toUpperCase().padStart(2, "0")}`,
    )
    .join("");
}

/** A private LLVM IR string constant `@name` holding `s` (NUL-terminated). */
export function constant(name: string, s: string): string {
  return `@${name} = private unnamed_addr constant [${Buffer.byteLength(s) + 1} x i8] c"${cString(s)}", align 1`;
}

/**
 * `poot.detect()`: 2 when CPUID and XCR0 show AVX-512 F/BW/CD/DQ/VL with the OS saving ZMM and opmask state (and
 * everything level 1 needs), 1 when they show AVX, AVX2, FMA, F16C and BMI2 with the OS saving YMM state, else 0
 * (the caller then keeps its Wasm kernels). Written for the baseline x86-64, so it runs anywhere.
 */
const ISA_DETECT = [
  "define internal i32 @poot.detect() #1 {",
  "entry:",
  '  %l1 = call { i32, i32, i32, i32 } asm "cpuid", "={ax},={bx},={cx},={dx},{ax},{cx},~{dirflag},~{fpsr},~{flags}"(i32 1, i32 0)',
  "  %c1 = extractvalue { i32, i32, i32, i32 } %l1, 2",
  // ECX bits 12 (FMA), 27 (OSXSAVE), 28 (AVX), 29 (F16C).
  "  %m1 = and i32 %c1, 939528192",
  "  %ok1 = icmp eq i32 %m1, 939528192",
  "  br i1 %ok1, label %xcr, label %none",
  "xcr:",
  '  %xg = call { i32, i32 } asm "xgetbv", "={ax},={dx},{cx},~{dirflag},~{fpsr},~{flags}"(i32 0)',
  "  %x0 = extractvalue { i32, i32 } %xg, 0",
  "  %xm = and i32 %x0, 6",
  "  %ok2 = icmp eq i32 %xm, 6",
  "  br i1 %ok2, label %leaf7, label %none",
  "leaf7:",
  '  %l7 = call { i32, i32, i32, i32 } asm "cpuid", "={ax},={bx},={cx},={dx},{ax},{cx},~{dirflag},~{fpsr},~{flags}"(i32 7, i32 0)',
  "  %b7 = extractvalue { i32, i32, i32, i32 } %l7, 1",
  // EBX bits 3 (BMI1), 5 (AVX2), 8 (BMI2).
  "  %m7 = and i32 %b7, 296",
  "  %ok3 = icmp eq i32 %m7, 296",
  "  br i1 %ok3, label %wide, label %none",
  "wide:",
  // EBX bits 16 (AVX-512F), 17 (DQ), 28 (CD), 30 (BW), 31 (VL); XCR0 bits 1, 2, 5, 6, 7 (SSE, AVX, opmask, ZMM).
  "  %m512 = and i32 %b7, -805109760",
  "  %ok4 = icmp eq i32 %m512, -805109760",
  "  %xz = and i32 %x0, 230",
  "  %ok5 = icmp eq i32 %xz, 230",
  "  %ok6 = and i1 %ok4, %ok5",
  "  %lvl = select i1 %ok6, i32 2, i32 1",
  "  ret i32 %lvl",
  "none:",
  "  ret i32 0",
  "}",
];

/**
 * The level the kernels run at (`@poot.level`: -1 = not yet detected, 0 none, 1 AVX2, 2 AVX-512), the entry points
 * that read and force it, and `poot_native_isa()`, which names it ("avx512", "avx2" or "none"). With one kernel set
 * (no AVX-512 set linked) level 2 runs level 1's kernels and is named "avx2".
 */
function levelEntries(wide: boolean): string[] {
  return [
    "@poot.level = internal global i32 -1, align 4",
    "",
    ...ISA_DETECT,
    "",
    "define internal i32 @poot.level.now() #1 {",
    "entry:",
    "  %l = load i32, ptr @poot.level, align 4",
    "  %known = icmp sge i32 %l, 0",
    "  br i1 %known, label %done, label %detect",
    "detect:",
    "  %d = call i32 @poot.detect()",
    `  %dl = ${wide ? "add i32 %d, 0" : "call i32 @llvm.umin.i32(i32 %d, i32 1)"}`,
    "  store i32 %dl, ptr @poot.level, align 4",
    "  ret i32 %dl",
    "done:",
    "  ret i32 %l",
    "}",
    "",
    "define ptr @poot_native_isa() #1 {",
    "  %l = call i32 @poot.level.now()",
    "  %is2 = icmp eq i32 %l, 2",
    "  %is1 = icmp eq i32 %l, 1",
    "  %n1 = select i1 %is1, ptr @poot.isa.avx2, ptr @poot.isa.none",
    "  %n = select i1 %is2, ptr @poot.isa.avx512, ptr %n1",
    "  ret ptr %n",
    "}",
    "",
    // poot_native_force("avx2" | "avx512"): 1 when this CPU (and this library) runs that set, which then runs.
    "define i32 @poot_native_force(ptr %name) #1 {",
    "  %best = call i32 @poot.detect()",
    "  %c3 = getelementptr inbounds i8, ptr %name, i64 3",
    "  %ch = load i8, ptr %c3, align 1",
    "  %w5 = icmp eq i8 %ch, 53",
    `  %want = select i1 %w5, i32 ${wide ? 2 : 3}, i32 1`,
    "  %ok = icmp ule i32 %want, %best",
    "  br i1 %ok, label %set, label %no",
    "set:",
    "  store i32 %want, ptr @poot.level, align 4",
    "  ret i32 1",
    "no:",
    "  ret i32 0",
    "}",
  ];
}

/** The function of `name` that runs the AVX-512 kernel at level 2 and the AVX2 kernel otherwise. */
function dispatcher(name: string): string[] {
  const args = "i64 %base, i32 %args, i32 %group";
  return [
    `define void @${name}(${args}) #1 {`,
    "  %l = call i32 @poot.level.now()",
    "  %w = icmp eq i32 %l, 2",
    "  br i1 %w, label %wide, label %narrow",
    "wide:",
    `  tail call void @${name}.avx512(${args})`,
    "  ret void",
    "narrow:",
    `  tail call void @${name}.avx2(${args})`,
    "  ret void",
    "}",
  ];
}

/**
 * The function of `name` that runs its AVX-512 VNNI kernel where the level is 2 (AVX-512, not forced down) and the CPU
 * has VNNI (`@poot.vnni.now`), else its widened AVX2 one (decision 2335).
 */
function vnniDispatcher(name: string): string[] {
  const args = "i64 %base, i32 %args, i32 %group";
  return [
    `define void @${name}(${args}) #1 {`,
    "  %l = call i32 @poot.level.now()",
    "  %w = icmp eq i32 %l, 2",
    "  %v = call i32 @poot.vnni.now()",
    "  %vv = icmp eq i32 %v, 1",
    "  %both = and i1 %w, %vv",
    "  br i1 %both, label %vnni, label %narrow",
    "vnni:",
    `  tail call void @${name}.vnni(${args})`,
    "  ret void",
    "narrow:",
    `  tail call void @${name}.avx2(${args})`,
    "  ret void",
    "}",
  ];
}

/** `@poot.vnni.now()`: `poot_native_vnni()`, detected once (CPUID is slow; kernels dispatch per workgroup). */
const VNNI_CACHED = [
  "@poot.vnni = internal global i32 -1, align 4",
  "",
  "define internal i32 @poot.vnni.now() #1 {",
  "entry:",
  "  %v = load i32, ptr @poot.vnni, align 4",
  "  %known = icmp sge i32 %v, 0",
  "  br i1 %known, label %done, label %detect",
  "detect:",
  "  %d = call i32 @poot_native_vnni()",
  "  store i32 %d, ptr @poot.vnni, align 4",
  "  ret i32 %d",
  "done:",
  "  ret i32 %v",
  "}",
];

/**
 * `poot_native_vnni()`: 1 when CPUID and XCR0 show AVX-512 F, DQ, CD, BW, VL and VNNI with the OS saving the opmask
 * and ZMM state (what {@link X86_VNNI_CPU} kernels need), else 0. Baseline x86-64 code.
 */
const VNNI_CHECK = [
  "define i32 @poot_native_vnni() #1 {",
  "entry:",
  '  %l1 = call { i32, i32, i32, i32 } asm "cpuid", "={ax},={bx},={cx},={dx},{ax},{cx},~{dirflag},~{fpsr},~{flags}"(i32 1, i32 0)',
  "  %c1 = extractvalue { i32, i32, i32, i32 } %l1, 2",
  // ECX bit 27 (OSXSAVE).
  "  %m1 = and i32 %c1, 134217728",
  "  %ok1 = icmp ne i32 %m1, 0",
  "  br i1 %ok1, label %xcr, label %none",
  "xcr:",
  '  %xg = call { i32, i32 } asm "xgetbv", "={ax},={dx},{cx},~{dirflag},~{fpsr},~{flags}"(i32 0)',
  "  %x0 = extractvalue { i32, i32 } %xg, 0",
  // XCR0 bits 1, 2 (SSE, AVX state), 5, 6, 7 (opmask, ZMM0-15 upper halves, ZMM16-31).
  "  %xm = and i32 %x0, 230",
  "  %ok2 = icmp eq i32 %xm, 230",
  "  br i1 %ok2, label %leaf7, label %none",
  "leaf7:",
  '  %l7 = call { i32, i32, i32, i32 } asm "cpuid", "={ax},={bx},={cx},={dx},{ax},{cx},~{dirflag},~{fpsr},~{flags}"(i32 7, i32 0)',
  "  %b7 = extractvalue { i32, i32, i32, i32 } %l7, 1",
  "  %c7 = extractvalue { i32, i32, i32, i32 } %l7, 2",
  // EBX bits 16 (AVX512F), 17 (DQ), 28 (CD), 30 (BW), 31 (VL); ECX bit 11 (AVX512_VNNI).
  "  %mb = and i32 %b7, 3489857536",
  "  %okb = icmp eq i32 %mb, 3489857536",
  "  %mc = and i32 %c7, 2048",
  "  %okc = icmp ne i32 %mc, 0",
  "  %ok3 = and i1 %okb, %okc",
  "  %r = zext i1 %ok3 to i32",
  "  ret i32 %r",
  "none:",
  "  ret i32 0",
  "}",
];

/**
 * The `define` … `}` lines and the `declare` lines of one x86 kernel's module (also linked for arm64, `arm64.ts`); with `suffix`, the function is defined
 * as `@name.suffix` with attributes `#attr` (one of several instruction-set variants of the kernel).
 */
export function parts(
  code: X86Code,
  suffix?: string,
  attr = 0,
): { name: string; define: string[]; declares: string[] } {
  const lines = code.text?.split("\n") ?? [];
  const start = lines.findIndex((l) => l.startsWith("define "));
  const name = /^define void @([\w.$]+)\(/.exec(lines[start] ?? "")?.[1];
  if (code.target !== "x86" || name === undefined)
    throw new CodegenError("invalid-kernel", `a ${code.target} kernel is not an x86 kernel`, { target: "x86" });
  const end = lines.indexOf("}", start);
  const define = lines.slice(start, end + 1);
  if (suffix !== undefined)
    define[0] = define[0]!
      .replace(`define void @${name}(`, `define internal void @${name}.${suffix}(`)
      .replace(/#0 \{$/, `#${attr} {`);
  // Kernels with the integer dot product run as AVX-512 VNNI code (attributes #3), whatever set they were given in.
  if (define.some((l) => l.includes("@llvm.x86.avx512.vpdpbusd"))) define[0] = define[0]!.replace(/ #\d+ \{$/, " #3 {");
  return { name, define, declares: lines.filter((l) => l.startsWith("declare ")) };
}

/** What {@link x86Library} reads of a lowered kernel. */
export type X86Code = Pick<TargetCode, "target" | "text">;

/**
 * Links lowered x86 kernels into one module with the loader's entry points: `poot_native_isa`, `poot_native_force`,
 * `poot_native_vnni`, `poot_native_source_hash` (returns `sourceHash`), `poot_native_addr` and `poot_native_kernels`
 * (the kernels' names, comma-separated). `codes` run as {@link X86_KERNEL_CPU} code, the entry points as baseline x86-64. With `wide` (the
 * same kernels lowered with AVX-512's 16-lane vectors, decision 2310), each kernel's symbol dispatches at run time to
 * the {@link X86_WIDE_KERNEL_CPU} variant where CPUID allows it, else to the `codes` variant. `single` kernels link
 * once, under their own name, without dispatch: those with the integer dot product (decision 2320) as
 * {@link X86_VNNI_CPU} code with AVX-512 VNNI (callable only where `poot_native_vnni()` returns 1), the others as
 * {@link X86_KERNEL_CPU} code. A `single` kernel with a namesake in `fallback` (the same kernel lowered with
 * `dot4U8I8` widened, decision 2335) links both, and its symbol dispatches to the VNNI one where the level is AVX-512
 * and the CPU has VNNI, else to the fallback as {@link X86_KERNEL_CPU} code: callable on every AVX2 CPU.
 */
export function x86Library(
  codes: readonly X86Code[],
  sourceHash: string,
  wide?: readonly X86Code[],
  single: readonly X86Code[] = [],
  fallback: readonly X86Code[] = [],
): string {
  const sets =
    wide === undefined
      ? codes.map((c) => parts(c))
      : [...codes.map((c) => parts(c, "avx2", 0)), ...wide.map((c) => parts(c, "avx512", 2))];
  const setNames = [...new Set(sets.map((p) => p.name))];
  const narrow = fallback.map((c) => parts(c, "avx2", 0));
  const paired = new Set(narrow.map((p) => p.name));
  const once = single.map((c) => (paired.has(parts(c).name) ? parts(c, "vnni", 3) : parts(c)));
  if (once.filter((p) => paired.has(p.name)).length !== paired.size)
    throw new CodegenError("invalid-kernel", "a fallback kernel has no namesake among the single kernels", {
      target: "x86",
    });
  const all = [...sets, ...once, ...narrow];
  const names = [...setNames, ...once.map((p) => p.name)];
  if (wide !== undefined && setNames.length !== codes.length)
    throw new CodegenError("invalid-kernel", "the AVX2 and AVX-512 kernel sets name different kernels", {
      target: "x86",
    });
  const declares = [
    ...new Set([
      ...all.flatMap((p) => p.declares),
      ...(wide === undefined ? ["declare i32 @llvm.umin.i32(i32, i32)"] : []),
    ]),
  ].sort();
  const out = [
    "; the poot native CPU kernel library: generated by @poot/codegen from the kernel IR",
    `target triple = "${X86_TRIPLE}"`,
    "",
    constant("poot.isa.avx2", "avx2"),
    constant("poot.isa.avx512", "avx512"),
    constant("poot.isa.none", "none"),
    constant("poot.hash", sourceHash),
    constant("poot.kernels", names.join(",")),
    "",
    ...levelEntries(wide !== undefined),
    "",
    ...VNNI_CHECK,
    "",
    ...(paired.size === 0 ? [] : [...VNNI_CACHED, ""]),
    "define ptr @poot_native_source_hash() #1 {",
    "  ret ptr @poot.hash",
    "}",
    "",
    "define ptr @poot_native_kernels() #1 {",
    "  ret ptr @poot.kernels",
    "}",
    "",
    "define i64 @poot_native_addr(ptr %p) #1 {",
    "  %a = ptrtoint ptr %p to i64",
    "  ret i64 %a",
    "}",
    "",
    ...all.flatMap((p) => [...p.define, ""]),
    ...(wide === undefined ? [] : setNames.flatMap((n) => [...dispatcher(n), ""])),
    ...[...paired].flatMap((n) => [...vnniDispatcher(n), ""]),
    ...declares,
    "",
    `attributes #0 = { nounwind "target-cpu"="${X86_KERNEL_CPU}" }`,
    `attributes #1 = { nounwind "target-cpu"="x86-64" }`,
    // 512-bit vectors stay whole (not split in two 256-bit halves, as the CPU's default tuning may prefer).
    `attributes #2 = { nounwind "target-cpu"="${X86_WIDE_KERNEL_CPU}" "min-legal-vector-width"="512" "prefer-vector-width"="512" }`,
    `attributes #3 = { nounwind "target-cpu"="${X86_VNNI_CPU}" "target-features"="+avx512vnni" }`,
    "",
  ];
  return out.join("\n");
}
