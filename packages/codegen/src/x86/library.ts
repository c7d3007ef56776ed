// The native kernel library as one LLVM module: the x86 kernels' functions, plus the entry points the loader calls
// (the instruction set this CPU runs, the library's source hash, a buffer's address). Deterministic text: the
// shared object llc + ld.lld make from it is byte for byte reproducible (decision 2300).

import type { TargetCode } from "../caps.js";
import { CodegenError } from "../errors.js";
import { X86_TRIPLE } from "./target.js";

/** The instruction-set level the kernels are compiled for (AVX2, FMA, F16C, BMI2: `-mcpu=x86-64-v3`). */
export const X86_KERNEL_CPU = "x86-64-v3";

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

function constant(name: string, s: string): string {
  return `@${name} = private unnamed_addr constant [${Buffer.byteLength(s) + 1} x i8] c"${cString(s)}", align 1`;
}

/**
 * `poot_native_isa()`: "avx2" when CPUID and XCR0 show AVX, AVX2, FMA, F16C and BMI2 with the OS saving YMM state,
 * else "none" (the caller then keeps its Wasm kernels). Written for the baseline x86-64, so it runs anywhere.
 */
const ISA_CHECK = [
  "define ptr @poot_native_isa() #1 {",
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
  "  %isa = select i1 %ok3, ptr @poot.isa.avx2, ptr @poot.isa.none",
  "  ret ptr %isa",
  "none:",
  "  ret ptr @poot.isa.none",
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

/** The `define` … `}` lines and the `declare` lines of one x86 kernel's module. */
function parts(code: X86Code): { name: string; define: string[]; declares: string[] } {
  const lines = code.text?.split("\n") ?? [];
  const start = lines.findIndex((l) => l.startsWith("define "));
  const name = /^define void @([\w.$]+)\(/.exec(lines[start] ?? "")?.[1];
  if (code.target !== "x86" || name === undefined)
    throw new CodegenError("invalid-kernel", `a ${code.target} kernel is not an x86 kernel`, { target: "x86" });
  const end = lines.indexOf("}", start);
  const define = lines.slice(start, end + 1);
  // Kernels with the integer dot product run as AVX-512 VNNI code (attributes #2), the others as AVX2 (#0).
  if (define.some((l) => l.includes("@llvm.x86.avx512.vpdpbusd"))) define[0] = define[0]!.replace(/ #0 \{$/, " #2 {");
  return { name, define, declares: lines.filter((l) => l.startsWith("declare ")) };
}

/** What {@link x86Library} reads of a lowered kernel. */
export type X86Code = Pick<TargetCode, "target" | "text">;

/**
 * Links lowered x86 kernels into one module with the loader's entry points: `poot_native_isa`, `poot_native_vnni`,
 * `poot_native_source_hash` (returns `sourceHash`), `poot_native_addr` and `poot_native_kernels` (the kernels' names,
 * comma-separated). Kernels run as {@link X86_KERNEL_CPU} code, the entry points as baseline x86-64.
 */
export function x86Library(codes: readonly X86Code[], sourceHash: string): string {
  const all = codes.map(parts);
  const names = all.map((p) => p.name);
  const declares = [...new Set(all.flatMap((p) => p.declares))].sort();
  const out = [
    "; the poot native CPU kernel library: generated by @poot/codegen from the kernel IR",
    `target triple = "${X86_TRIPLE}"`,
    "",
    constant("poot.isa.avx2", "avx2"),
    constant("poot.isa.none", "none"),
    constant("poot.hash", sourceHash),
    constant("poot.kernels", names.join(",")),
    "",
    ...ISA_CHECK,
    "",
    ...VNNI_CHECK,
    "",
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
    ...declares,
    "",
    `attributes #0 = { nounwind "target-cpu"="${X86_KERNEL_CPU}" }`,
    `attributes #1 = { nounwind "target-cpu"="x86-64" }`,
    `attributes #2 = { nounwind "target-cpu"="${X86_VNNI_CPU}" "target-features"="+avx512vnni" }`,
    "",
  ];
  return out.join("\n");
}
