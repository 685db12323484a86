import { createHash } from 'node:crypto';

/**
 * Merkle trees as RFC 9162 (Certificate Transparency 2.0) defines them: a leaf hashes as
 * SHA-256(0x00 ‖ leaf), a node as SHA-256(0x01 ‖ left ‖ right), and a tree of n leaves splits at
 * the largest power of two below n. An inclusion proof is the audit path of RFC 9162 §2.1.3, so
 * any implementation of it checks a rastro proof.
 */

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

export const leafHash = (leaf: Uint8Array): Buffer => sha256(LEAF, leaf);
const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer => sha256(NODE, left, right);

/** The largest power of two below `n` (n > 1). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function root(leaves: readonly Uint8Array[], from: number, to: number): Buffer {
  const n = to - from;
  if (n === 1) return leafHash(leaves[from]!);
  const k = split(n);
  return nodeHash(root(leaves, from, from + k), root(leaves, from + k, to));
}

/** The root of the tree over `leaves` (at least one). */
export function merkleRoot(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) throw new RangeError('a Merkle tree needs at least one leaf');
  return root(leaves, 0, leaves.length);
}

/** The audit path of leaf `index`: the sibling hashes from the leaf's level up to the root. */
export function merklePath(leaves: readonly Uint8Array[], index: number): Buffer[] {
  const path: Buffer[] = [];
  let from = 0;
  let to = leaves.length;
  const above: Buffer[] = [];
  while (to - from > 1) {
    const k = split(to - from);
    if (index < from + k) {
      above.push(root(leaves, from + k, to));
      to = from + k;
    } else {
      above.push(root(leaves, from, from + k));
      from += k;
    }
  }
  // Collected from the root down; the path goes from the leaf up.
  for (let i = above.length - 1; i >= 0; i--) path.push(above[i]!);
  return path;
}

/** The root that leaf `leaf` at `index` of a tree of `size` leaves proves through `path` (RFC 9162 §2.1.3.2), or undefined when the path cannot belong to such a tree. */
export function rootFromPath(leaf: Uint8Array, index: number, size: number, path: readonly Uint8Array[]): Buffer | undefined {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = leafHash(leaf);
  for (const p of path) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}
