// `POOT_TIMING=1 poot run …`: one stderr line per phase of the start (issue #16's first-token breakdown). The first
// mark's figure is Node's start and the module imports (performance.now() counts from the process's start); the
// executor's own phases (weights read and uploaded, lowering, device code load) are summed by @poot/executor.
import { phaseTotals, timingOn } from "@poot/executor";

/**
 * A phase marker: with POOT_TIMING=1 each call writes `poot timing: PHASE +MS ms (at MS ms)` (since the last mark,
 * since the process's start), and with `totals` the executor's per-phase sums so far; without it, it does nothing.
 */
export function phaseMarker(write: (line: string) => void): (phase: string, totals?: boolean) => void {
  if (!timingOn()) return () => {};
  let last = 0;
  return (phase, totals = false) => {
    const now = performance.now();
    const inner = [...phaseTotals()].map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ");
    write(
      `poot timing: ${phase} +${(now - last).toFixed(1)} ms (at ${now.toFixed(1)} ms)${totals && inner !== "" ? `; executor: ${inner} ms` : ""}\n`,
    );
    last = now;
  };
}
