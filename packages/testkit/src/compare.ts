// How the tests compare logits with a reference: the fixtures README's agreement measure and greedy's pick.

/**
 * max |a - ref| / max |ref| over the whole arrays (the fixtures README's agreement measure). Throws when the lengths
 * differ, so a truncated or padded result never passes as a close one.
 */
export function relErr(a: ArrayLike<number>, ref: ArrayLike<number>): number {
  if (a.length !== ref.length) throw new Error(`relErr: ${a.length} values against a reference of ${ref.length}`);
  let d = 0,
    m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return d / m;
}

/** The index of the largest value (the first one on ties), as greedy decoding picks. */
export function argmax(a: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[best]!) best = i;
  return best;
}
