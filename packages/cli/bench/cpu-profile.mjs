// What the CPU step profiles (cpu-prefill-profile.mjs, cpu-decode-profile.mjs) share: the random prompt, the process's
// CPU time, and the profile's phases grouped by label.
import { Rng } from "@poot/runtime";

/** `length` token ids drawn from the model's vocabulary with a fixed seed, so runs compare. */
export function randomPrompt(engine, length) {
  const rng = new Rng(1);
  return Array.from({ length }, () => Math.floor(rng.next() * engine.config.vocabSize));
}

/** This process's user + system CPU time so far, in ms. */
export function cpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * The phases of a profile summed by label (layer suffixes `_l<N>` and `.<N>` folded unless `raw`), largest wall first:
 * rows of [label, { wall, busy, n }] (ms; busy summed over the threads), and the totals.
 */
export function phaseRows(profile, raw) {
  const rows = new Map();
  let total = 0,
    busy = 0;
  for (const p of profile) {
    const key = raw ? p.label : p.label.replace(/_l\d+/g, "_lN").replace(/\.\d+/g, "");
    const r = rows.get(key) ?? { wall: 0, busy: 0, n: 0 };
    const b = p.busy.reduce((a, x) => a + x, 0);
    r.wall += p.wall;
    r.busy += b;
    r.n++;
    total += p.wall;
    busy += b;
    rows.set(key, r);
  }
  return { rows: [...rows].sort((a, b) => b[1].wall - a[1].wall), total, busy };
}
