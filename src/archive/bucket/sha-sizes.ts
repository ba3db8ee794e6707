/**
 * The content objects a bucket archive run knows of, by sha256, with their sizes: those the
 * previous snapshot names, those an interrupted run left, and those this run uploads. Kept in
 * typed arrays (the digest's 32 bytes, the size, a slot: about 50 bytes an object) instead of a
 * Map of hex strings (some 150), as ManifestIndex keeps lines (issue 46). A sha256 is already
 * evenly spread: its first four bytes are the slot's hash.
 */
import { doubledSlots, grown } from '../../sinks/hash-slots.js';

const DIGEST_BYTES = 32;

export class ShaSizes {
  private count = 0;
  private digests = new Uint8Array(DIGEST_BYTES * 1024);
  private sizes = new Float64Array(1024);
  /** Each object's entry plus one (0: empty), at the slot of its hash or the next free one. */
  private slots = new Int32Array(2048);

  /** How many objects it holds. */
  get size(): number {
    return this.count;
  }

  /** Records the object `sha256` (hex) with `size` bytes. */
  set(sha256: string, size: number): void {
    const digest = digestOf(sha256);
    const slot = this.slotOf(digest);
    let entry = this.slots[slot]! - 1;
    if (entry < 0) {
      entry = this.add(digest);
      this.slots[slot] = entry + 1;
      if (2 * this.count > this.slots.length) this.slots = doubledSlots(this.slots, (e) => this.hashOf(e));
    }
    this.sizes[entry] = size;
  }

  /** The size recorded for the object `sha256`, or undefined when it is not known. */
  get(sha256: string): number | undefined {
    const entry = this.slots[this.slotOf(digestOf(sha256))]! - 1;
    return entry < 0 ? undefined : this.sizes[entry];
  }

  private add(digest: Buffer): number {
    if (this.count === this.sizes.length) {
      this.sizes = grown(this.sizes, 2 * this.count);
      this.digests = grown(this.digests, 2 * this.count * DIGEST_BYTES);
    }
    this.digests.set(digest, this.count * DIGEST_BYTES);
    return this.count++;
  }

  private hashOf(entry: number): number {
    const at = entry * DIGEST_BYTES;
    return ((this.digests[at]! << 24) | (this.digests[at + 1]! << 16) | (this.digests[at + 2]! << 8) | this.digests[at + 3]!) >>> 0;
  }

  private slotOf(digest: Buffer): number {
    const mask = this.slots.length - 1;
    for (let at = digest.readUInt32BE(0) & mask; ; at = (at + 1) & mask) {
      const entry = this.slots[at]! - 1;
      if (entry < 0 || this.sameDigest(entry, digest)) return at;
    }
  }

  private sameDigest(entry: number, digest: Buffer): boolean {
    const at = entry * DIGEST_BYTES;
    for (let i = 0; i < DIGEST_BYTES; i += 1) if (this.digests[at + i] !== digest[i]) return false;
    return true;
  }
}

function digestOf(sha256: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a sha256 in hex: ${sha256.slice(0, 80)}`);
  return Buffer.from(sha256, 'hex');
}
