/**
 * Pieces of the open-addressed tables that index a manifest's lines or a zip's entries in typed
 * arrays (ManifestIndex, EarlierZip): a Map of 200,000 entries took 7 to 11 MB of the heap.
 */

/** A 32-bit FNV-1a hash of `text`, from `seed`. */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * `slots` (each an entry plus one, 0 for an empty slot, at the slot of its hash or the next free
 * one after it) in a table twice its size; `hashOf` gives an entry's hash.
 */
export function doubledSlots(slots: Int32Array, hashOf: (entry: number) => number): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(slots.length * 2);
  const mask = grown.length - 1;
  for (const slot of slots) {
    if (slot === 0) continue;
    let at = hashOf(slot - 1) & mask;
    while (grown[at] !== 0) at = (at + 1) & mask;
    grown[at] = slot;
  }
  return grown;
}

/** A copy of `from` in an array of `length` (its type's). */
export function grown<T extends Float64Array | Uint32Array | Uint16Array | Uint8Array>(from: T, length: number): T {
  const to = new (from.constructor as new (length: number) => T)(length);
  to.set(from);
  return to;
}
