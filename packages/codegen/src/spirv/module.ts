// A SPIR-V module builder: ids, the logical-layout sections, deduplicated types and constants, and functions.
// It knows the binary form only; what to emit for a kernel lives in the SPIR-V lowering.

import { invariant } from "../errors.js";
import { AddressingModel, Decoration, MAGIC, MemoryModel, Op, VERSION_1_3 } from "./spec.js";
import { SpirvFunction } from "./function.js";
import { instruction, stringWords } from "./words.js";

export { instruction, stringWords } from "./words.js";

/** Options of {@link SpirvModule}. */
export interface SpirvModuleOptions {
  /** SPIR-V version word; defaults to 1.3 (what Vulkan 1.1 consumes). */
  readonly version?: number;
}

/**
 * Builds a SPIR-V module in the order the spec's logical layout requires, whatever order the
 * caller adds things in. Types and constants are deduplicated (the spec forbids duplicate
 * non-aggregate types); ids are allocated densely from 1.
 */
export class SpirvModule {
  private bound = 1;
  private readonly version: number;
  private readonly capabilities = new Set<number>();
  private readonly extensions = new Set<string>();
  private readonly extImports = new Map<string, number>();
  private memoryModel: number = MemoryModel.GLSL450;
  private readonly entryPoints: number[] = [];
  private readonly executionModes: number[] = [];
  private readonly debug: number[] = [];
  private readonly annotations: number[] = [];
  private readonly globals: number[] = [];
  private readonly functions: SpirvFunction[] = [];
  private readonly dedup = new Map<string, number>();

  constructor(options: SpirvModuleOptions = {}) {
    this.version = options.version ?? VERSION_1_3;
  }

  /** Allocates a fresh result id. */
  id(): number {
    return this.bound++;
  }

  /** Declares a capability (idempotent). */
  capability(cap: number): void {
    this.capabilities.add(cap);
  }

  /** Declares an extension by name (idempotent). */
  extension(name: string): void {
    this.extensions.add(name);
  }

  /** Imports an extended instruction set such as `GLSL.std.450`, returning its id (idempotent). */
  extInstImport(name: string): number {
    let id = this.extImports.get(name);
    if (id === undefined) {
      id = this.id();
      this.extImports.set(name, id);
    }
    return id;
  }

  /** Sets the memory model (the addressing model is always Logical, as Vulkan requires). */
  setMemoryModel(model: number): void {
    this.memoryModel = model;
  }

  /** Declares an entry point with its interface variables. */
  entryPoint(model: number, fn: number, name: string, iface: readonly number[]): void {
    this.entryPoints.push(...instruction(Op.EntryPoint, [model, fn, ...stringWords(name), ...iface]));
  }

  /** Adds an execution mode to an entry point. */
  executionMode(fn: number, mode: number, ...literals: number[]): void {
    this.executionModes.push(...instruction(Op.ExecutionMode, [fn, mode, ...literals]));
  }

  /** Names an id for debugging (OpName). */
  name(id: number, name: string): void {
    this.debug.push(...instruction(Op.Name, [id, ...stringWords(name)]));
  }

  /** Decorates an id. */
  decorate(id: number, decoration: number, ...literals: number[]): void {
    this.annotations.push(...instruction(Op.Decorate, [id, decoration, ...literals]));
  }

  /** Decorates a member of a struct type. */
  memberDecorate(struct: number, member: number, decoration: number, ...literals: number[]): void {
    this.annotations.push(...instruction(Op.MemberDecorate, [struct, member, decoration, ...literals]));
  }

  /** Emits a deduplicated type or constant: same opcode and operands give the same id. */
  private unique(key: string, opcode: number, operandsAfterResult: readonly number[], resultType?: number): number {
    const k = `${key}|${opcode}|${resultType ?? ""}|${operandsAfterResult.join(",")}`;
    const found = this.dedup.get(k);
    if (found !== undefined) return found;
    const id = this.id();
    const ops = resultType === undefined ? [id, ...operandsAfterResult] : [resultType, id, ...operandsAfterResult];
    this.globals.push(...instruction(opcode, ops));
    this.dedup.set(k, id);
    return id;
  }

  /** `void`. */
  typeVoid(): number {
    return this.unique("t", Op.TypeVoid, []);
  }
  /** `bool`. */
  typeBool(): number {
    return this.unique("t", Op.TypeBool, []);
  }
  /** An integer type of `width` bits. */
  typeInt(width: number, signed: boolean): number {
    return this.unique("t", Op.TypeInt, [width, signed ? 1 : 0]);
  }
  /** A float type of `width` bits. */
  typeFloat(width: number): number {
    return this.unique("t", Op.TypeFloat, [width]);
  }
  /** A vector of `count` components. */
  typeVector(component: number, count: number): number {
    return this.unique("t", Op.TypeVector, [component, count]);
  }
  /** A sized array; `stride` (bytes) adds an ArrayStride decoration, which makes it a distinct type. */
  typeArray(element: number, length: number, stride?: number): number {
    const len = this.constant(this.typeInt(32, false), length);
    const id = this.unique(`arr${stride ?? ""}`, Op.TypeArray, [element, len]);
    if (stride !== undefined && !this.dedup.has(`dec${id}`)) {
      this.dedup.set(`dec${id}`, 1);
      this.decorate(id, Decoration.ArrayStride, stride);
    }
    return id;
  }
  /** A runtime array with its ArrayStride (needed for every array in a Block). */
  typeRuntimeArray(element: number, stride: number): number {
    const id = this.unique(`rta${stride}`, Op.TypeRuntimeArray, [element]);
    if (!this.dedup.has(`dec${id}`)) {
      this.dedup.set(`dec${id}`, 1);
      this.decorate(id, Decoration.ArrayStride, stride);
    }
    return id;
  }
  /**
   * A struct type. Structs are never deduplicated because their decorations (Block, Offset)
   * belong to the id; each call returns a fresh type.
   */
  typeStruct(
    members: readonly number[],
    layout?: { readonly block: boolean; readonly offsets: readonly number[] },
  ): number {
    const id = this.id();
    this.globals.push(...instruction(Op.TypeStruct, [id, ...members]));
    if (layout) {
      if (layout.block) this.decorate(id, Decoration.Block);
      layout.offsets.forEach((off, i) => this.memberDecorate(id, i, Decoration.Offset, off));
    }
    return id;
  }
  /** A pointer type. */
  typePointer(storageClass: number, pointee: number): number {
    return this.unique("t", Op.TypePointer, [storageClass, pointee]);
  }
  /** A function type. */
  typeFunction(ret: number, params: readonly number[] = []): number {
    return this.unique("t", Op.TypeFunction, [ret, ...params]);
  }

  /** A scalar constant given as raw literal words (32-bit types: one word). */
  constantWords(type: number, words: readonly number[]): number {
    return this.unique("c", Op.Constant, words, type);
  }
  /** An integer or float constant of a 32-bit type; floats are encoded by their f32 bits. */
  constant(type: number, value: number, kind: "int" | "float" = "int"): number {
    if (kind === "float") {
      const f = new Float32Array([value]);
      return this.constantWords(type, [new Uint32Array(f.buffer)[0]!]);
    }
    return this.constantWords(type, [value >>> 0]);
  }
  /** A u32 constant. */
  u32(value: number): number {
    return this.constant(this.typeInt(32, false), value);
  }
  /** An i32 constant. */
  i32(value: number): number {
    return this.constant(this.typeInt(32, true), value);
  }
  /** An f32 constant. */
  f32(value: number): number {
    return this.constant(this.typeFloat(32), value, "float");
  }
  /** A bool constant. */
  bool(value: boolean): number {
    return this.unique("c", value ? Op.ConstantTrue : Op.ConstantFalse, [], this.typeBool());
  }
  /** A composite constant. */
  constantComposite(type: number, parts: readonly number[]): number {
    return this.unique("c", Op.ConstantComposite, parts, type);
  }
  /** OpConstantNull of a type (zero initializer). */
  constantNull(type: number): number {
    return this.unique("c", Op.ConstantNull, [], type);
  }

  /** A module-scope variable (StorageBuffer, Uniform, Workgroup, Input, ...). */
  variable(pointerType: number, storageClass: number): number {
    const id = this.id();
    this.globals.push(...instruction(Op.Variable, [pointerType, id, storageClass]));
    return id;
  }

  /** Starts a function; finish it with {@link SpirvFunction.end}. */
  function(returnType: number, fnType: number, control = 0): SpirvFunction {
    const fn = new SpirvFunction(this, returnType, fnType, control);
    this.functions.push(fn);
    return fn;
  }

  /** The module as words: header then the sections in logical-layout order. */
  encode(): Uint32Array {
    const words: number[] = [MAGIC, this.version, 0, this.bound, 0];
    for (const c of this.capabilities) words.push(...instruction(Op.Capability, [c]));
    for (const e of this.extensions) words.push(...instruction(Op.Extension, stringWords(e)));
    for (const [n, id] of this.extImports) words.push(...instruction(Op.ExtInstImport, [id, ...stringWords(n)]));
    words.push(...instruction(Op.MemoryModel, [AddressingModel.Logical, this.memoryModel]));
    words.push(...this.entryPoints, ...this.executionModes, ...this.debug, ...this.annotations, ...this.globals);
    for (const f of this.functions) words.push(...f.words());
    // The bound must be read after function bodies were built, so patch it last.
    words[3] = this.bound;
    return Uint32Array.from(words);
  }

  /** The module as little-endian bytes (the `.spv` file format). */
  bytes(): Uint8Array {
    const w = this.encode();
    return new Uint8Array(w.buffer, w.byteOffset, w.byteLength);
  }
}
