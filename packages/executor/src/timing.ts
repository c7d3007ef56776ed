// Opt-in phase timing for where a start's time goes (issue #16's first-token breakdown): with POOT_TIMING=1 in the
// environment, the generic executor sums the milliseconds it spends per phase (weights read from the source, mapped
// or uploaded, lowering, the device's code load), and the CLI prints them. Off, `timed` only calls through.

const totals = new Map<string, number>();

/** Whether POOT_TIMING=1 is set now. */
export function timingOn(): boolean {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.POOT_TIMING === "1";
}

/** Runs `f`, adding its wall time to `phase`'s total when timing is on. */
export function timed<T>(phase: string, f: () => T): T {
  if (!timingOn()) return f();
  const t0 = performance.now();
  try {
    return f();
  } finally {
    totals.set(phase, (totals.get(phase) ?? 0) + performance.now() - t0);
  }
}

/** The milliseconds summed per phase so far in this process (empty while timing was off). */
export function phaseTotals(): ReadonlyMap<string, number> {
  return totals;
}
