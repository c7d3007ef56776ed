// A SPIR-V function body under construction, with structured control-flow helpers.
// Selection and loop constructs emit the merge instructions that Shader-capability modules require.

import { invariant } from "../errors.js";
import { Op, StorageClass } from "./spec.js";
import type { SpirvModule } from "./module.js";
import { instruction } from "./words.js";

/**
 * A function being built. Function-storage variables are collected separately because the spec
 * requires them at the very start of the first block, wherever the lowering decides it needs one.
 */
export class SpirvFunction {
  /** The function's result id. */
  readonly id: number;
  private readonly head: number[];
  private readonly vars: number[] = [];
  private readonly body: number[] = [];
  private firstLabel = 0;
  private open = false;
  private ended = false;

  /** @internal Use {@link SpirvModule.function}. */
  constructor(
    private readonly mod: SpirvModule,
    returnType: number,
    fnType: number,
    control: number,
  ) {
    this.id = mod.id();
    this.head = instruction(Op.Function, [returnType, this.id, control, fnType]);
    this.firstLabel = mod.id();
    this.open = true;
  }

  /** Whether the current block is still open (not yet terminated). */
  get blockOpen(): boolean {
    return this.open;
  }

  /** Emits an instruction with a result; returns the result id. */
  op(opcode: number, resultType: number, ...operands: number[]): number {
    invariant(this.open, `SPIR-V op ${opcode} outside an open block`);
    const id = this.mod.id();
    this.body.push(...instruction(opcode, [resultType, id, ...operands]));
    return id;
  }

  /** Emits an instruction without a result (stores, barriers, merges). */
  stmt(opcode: number, ...operands: number[]): void {
    invariant(this.open, `SPIR-V op ${opcode} outside an open block`);
    this.body.push(...instruction(opcode, operands));
  }

  /** Calls an extended instruction (e.g. GLSL.std.450 Exp). */
  ext(set: number, resultType: number, inst: number, ...operands: number[]): number {
    return this.op(Op.ExtInst, resultType, set, inst, ...operands);
  }

  /** Declares a Function-storage variable (hoisted to the first block). */
  localVariable(pointerType: number, initializer?: number): number {
    const id = this.mod.id();
    const ops = [pointerType, id, StorageClass.Function];
    if (initializer !== undefined) ops.push(initializer);
    this.vars.push(...instruction(Op.Variable, ops));
    return id;
  }

  /** Terminates the current block with a terminator instruction. */
  terminate(opcode: number, ...operands: number[]): void {
    this.stmt(opcode, ...operands);
    this.open = false;
  }

  /** Opens a new block with the given label id. */
  label(id: number): void {
    invariant(!this.open, "SPIR-V block opened while the previous one is open");
    this.body.push(...instruction(Op.Label, [id]));
    this.open = true;
  }

  /** Opens a fresh (unreachable) block if the last one was terminated, so code after `break` has a home. */
  ensureOpen(): void {
    if (!this.open) this.label(this.mod.id());
  }

  /** Branches to `target` if the current block is still open (a `return` may have closed it). */
  branchIfOpen(target: number): void {
    if (this.open) this.terminate(Op.Branch, target);
  }

  /**
   * A structured `if`: OpSelectionMerge then OpBranchConditional; each arm falls through to the merge block.
   */
  ifThen(cond: number, thenArm: () => void, elseArm?: () => void): void {
    const thenL = this.mod.id();
    const mergeL = this.mod.id();
    const elseL = elseArm ? this.mod.id() : mergeL;
    this.stmt(Op.SelectionMerge, mergeL, 0);
    this.terminate(Op.BranchConditional, cond, thenL, elseL);
    this.label(thenL);
    thenArm();
    this.branchIfOpen(mergeL);
    if (elseArm) {
      this.label(elseL);
      elseArm();
      this.branchIfOpen(mergeL);
    }
    this.label(mergeL);
  }

  /**
   * A structured loop: header (OpLoopMerge) -> condition block -> body -> continue block -> header.
   * `cond` runs in its own block and returns the bool that keeps the loop going; `step` runs in the
   * continue target, which is the only block allowed to branch back to the header.
   */
  loop(
    cond: () => number,
    body: (labels: { readonly merge: number; readonly cont: number }) => void,
    step: () => void,
  ): void {
    const header = this.mod.id();
    const condL = this.mod.id();
    const bodyL = this.mod.id();
    const cont = this.mod.id();
    const merge = this.mod.id();
    this.terminate(Op.Branch, header);
    this.label(header);
    this.stmt(Op.LoopMerge, merge, cont, 0);
    this.terminate(Op.Branch, condL);
    this.label(condL);
    const c = cond();
    this.terminate(Op.BranchConditional, c, bodyL, merge);
    this.label(bodyL);
    body({ merge, cont });
    this.branchIfOpen(cont);
    this.label(cont);
    step();
    this.terminate(Op.Branch, header);
    this.label(merge);
  }

  /** Ends the function (a still-open block returns). */
  end(): void {
    if (this.open) this.terminate(Op.Return);
    this.ended = true;
  }

  /** @internal The encoded function, variables hoisted into the first block. */
  words(): number[] {
    invariant(this.ended, "SPIR-V function encoded before end()");
    return [
      ...this.head,
      ...instruction(Op.Label, [this.firstLabel]),
      ...this.vars,
      ...this.body,
      ...instruction(Op.FunctionEnd, []),
    ];
  }
}
