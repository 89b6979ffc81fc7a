//! The audit log's Merkle tree: RFC 9162 (Certificate Transparency 2.0), section 2.1.
//!
//! An organization's sealed entries are the leaves, in `seq` order (leaf `i` is entry `i + 1`).
//! A leaf's hash is `SHA-256(0x00 ‖ entry)`, an inner node's `SHA-256(0x01 ‖ left ‖ right)`, and
//! the tree of `n` leaves splits at the largest power of two below `n`. Every subtree these
//! algorithms ask for — the root, each node of an inclusion or consistency proof — is a run of
//! **perfect, aligned** subtrees ([`NodeId`]), which the store keeps as they complete; so a
//! proof is a handful of stored hashes folded together, never a walk over the log.
//!
//! Written here rather than taken from a crate: the crates that build RFC 9162 trees keep every
//! leaf in memory, and ours live in the database. The verifiers below serve our own tests; the
//! black-box tests check our proofs with an independent implementation (`pymerkle`).

use sha2::{Digest, Sha256};

/// A SHA-256 digest.
pub type Hash = [u8; 32];

/// `SHA-256(0x00 ‖ data)`: the hash of a leaf.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x00]);
    hasher.update(data);
    hasher.finalize().into()
}

/// `SHA-256(0x01 ‖ left ‖ right)`: the hash of an inner node.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x01]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The root of the empty tree: `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Lower-case hex of a hash.
pub fn to_hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash of 64 hex digits; `None` for anything else.
pub fn from_hex(text: &str) -> Option<Hash> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut hash = [0_u8; 32];
    for (byte, pair) in hash.iter_mut().zip(text.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(hash)
}

/// A perfect subtree at an aligned place: leaves `index·2^level .. (index+1)·2^level`. Level 0
/// is a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    /// Its height: 2^level leaves.
    pub level: u32,
    /// Its place among the subtrees of its level, from 0.
    pub index: u64,
}

/// The perfect subtrees that make up leaves `start..end`, left to right, each as large as its
/// place allows. For the ranges RFC 9162 asks for (a subtree of the tree), folding their hashes
/// from the right ([`fold`]) gives the range's hash.
pub fn cover(mut start: u64, end: u64) -> Vec<NodeId> {
    let mut nodes = Vec::new();
    while start < end {
        let fits = 63 - (end - start).leading_zeros();
        let aligned = if start == 0 { 63 } else { start.trailing_zeros() };
        let level = fits.min(aligned);
        nodes.push(NodeId { level, index: start >> level });
        start += 1 << level;
    }
    nodes
}

/// The hash of a run of adjacent subtrees, folded from the right: `H(a, H(b, c))`.
pub fn fold(hashes: &[Hash]) -> Hash {
    let mut iter = hashes.iter().rev();
    let Some(last) = iter.next() else { return empty_root() };
    iter.fold(*last, |right, left| node_hash(left, &right))
}

/// The largest power of two smaller than `n` (`n` ≥ 2).
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// The leaf ranges whose hashes make leaf `index`'s inclusion proof in a tree of `size` leaves
/// (RFC 9162 `PATH(m, D[n])`), from the leaf's sibling up. `index < size`.
pub fn inclusion_ranges(index: u64, size: u64) -> Vec<(u64, u64)> {
    let (mut lo, mut hi) = (0, size);
    let mut ranges = Vec::new();
    while hi - lo > 1 {
        let k = split(hi - lo);
        if index < lo + k {
            ranges.push((lo + k, hi));
            hi = lo + k;
        } else {
            ranges.push((lo, lo + k));
            lo += k;
        }
    }
    ranges.reverse();
    ranges
}

/// The leaf ranges whose hashes make the consistency proof from a tree of `old` leaves to one of
/// `new` (RFC 9162 `PROOF(m, D[n])`), in the RFC's order. `0 < old ≤ new`; empty when equal.
pub fn consistency_ranges(old: u64, new: u64) -> Vec<(u64, u64)> {
    let mut ranges = Vec::new();
    if old == 0 || old >= new {
        return ranges;
    }
    // SUBPROOF(m, D[lo:hi], b), unrolled: each step adds the range it does not descend into.
    let (mut m, mut lo, mut hi, mut complete) = (old, 0, new, true);
    while m != hi - lo {
        let k = split(hi - lo);
        if m <= k {
            ranges.push((lo + k, hi));
            hi = lo + k;
        } else {
            ranges.push((lo, lo + k));
            m -= k;
            lo += k;
            complete = false;
        }
    }
    if !complete {
        ranges.push((lo, hi));
    }
    ranges.reverse();
    ranges
}

/// The hashes of the perfect subtrees of a tree of `size` leaves, largest first (one per set bit
/// of `size`): all it takes to append leaves and to compute the root. Kept with each tree head.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frontier {
    size: u64,
    hashes: Vec<Hash>,
}

impl Frontier {
    /// The frontier of a tree of `size` leaves; `None` when `hashes` are not one per set bit.
    pub fn new(size: u64, hashes: Vec<Hash>) -> Option<Self> {
        (hashes.len() == size.count_ones() as usize).then_some(Self { size, hashes })
    }

    /// How many leaves the tree holds.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The subtree hashes, largest first.
    pub fn hashes(&self) -> &[Hash] {
        &self.hashes
    }

    /// The tree's root hash.
    pub fn root(&self) -> Hash {
        fold(&self.hashes)
    }

    /// Appends a leaf; returns every subtree it completed, the leaf first, so that the store
    /// keeps them for proofs.
    pub fn push(&mut self, leaf: Hash) -> Vec<(NodeId, Hash)> {
        let mut index = self.size;
        let mut completed = vec![(NodeId { level: 0, index }, leaf)];
        let mut hash = leaf;
        let mut level = 0;
        while index & 1 == 1 {
            let left = self.hashes.pop().unwrap_or_default();
            hash = node_hash(&left, &hash);
            index >>= 1;
            level += 1;
            completed.push((NodeId { level, index }, hash));
        }
        self.hashes.push(hash);
        self.size += 1;
        completed
    }
}

/// RFC 9162 2.1.3.2: whether `path` proves `leaf` is leaf `index` of the tree of `size` leaves
/// whose root is `root`.
pub fn verify_inclusion(leaf: &Hash, index: u64, size: u64, path: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f_n, mut s_n) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if s_n == 0 {
            return false;
        }
        if f_n & 1 == 1 || f_n == s_n {
            r = node_hash(p, &r);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    s_n == 0 && r == *root
}

/// RFC 9162 2.1.4.2: whether `proof` shows the tree of `old` leaves with root `old_root` is a
/// prefix of the tree of `new` leaves with root `new_root`.
pub fn verify_consistency(old: u64, new: u64, proof: &[Hash], old_root: &Hash, new_root: &Hash) -> bool {
    if old == new {
        return proof.is_empty() && old_root == new_root;
    }
    if old == 0 || old > new {
        return false;
    }
    let mut path: Vec<Hash> = proof.to_vec();
    if old.is_power_of_two() {
        path.insert(0, *old_root);
    }
    let Some((first, rest)) = path.split_first() else { return false };
    let (mut f_n, mut s_n) = (old - 1, new - 1);
    while f_n & 1 == 1 {
        f_n >>= 1;
        s_n >>= 1;
    }
    let (mut f_r, mut s_r) = (*first, *first);
    for c in rest {
        if s_n == 0 {
            return false;
        }
        if f_n & 1 == 1 || f_n == s_n {
            f_r = node_hash(c, &f_r);
            s_r = node_hash(c, &s_r);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            s_r = node_hash(&s_r, c);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    f_r == *old_root && s_r == *new_root && s_n == 0
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// RFC 9162's MTH by its definition, the reference the rest is checked against.
    fn mth(leaves: &[Hash]) -> Hash {
        match leaves.len() {
            0 => empty_root(),
            1 => leaves[0],
            n => {
                let k = split(n as u64) as usize;
                node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
            }
        }
    }

    fn leaves(n: u64) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(format!("entry {i}").as_bytes())).collect()
    }

    /// Every node the frontier completed, as the store keeps them.
    fn grow(leaves: &[Hash]) -> (Frontier, HashMap<NodeId, Hash>) {
        let mut frontier = Frontier::default();
        let mut nodes = HashMap::new();
        for leaf in leaves {
            nodes.extend(frontier.push(*leaf));
        }
        (frontier, nodes)
    }

    fn range_hash(nodes: &HashMap<NodeId, Hash>, (lo, hi): (u64, u64)) -> Hash {
        fold(&cover(lo, hi).iter().map(|id| nodes[id]).collect::<Vec<_>>())
    }

    #[test]
    fn the_frontier_root_is_the_rfc_root_at_every_size() {
        let all = leaves(70);
        let mut frontier = Frontier::default();
        assert_eq!(frontier.root(), empty_root());
        for (n, leaf) in all.iter().enumerate() {
            frontier.push(*leaf);
            assert_eq!(frontier.root(), mth(&all[..=n]), "size {}", n + 1);
            assert_eq!(frontier.hashes().len(), (n + 1).count_ones() as usize);
        }
    }

    #[test]
    fn proofs_from_stored_nodes_verify_and_match_the_definition() {
        let all = leaves(37);
        let (_, nodes) = grow(&all);
        for size in 1..=37_u64 {
            let root = mth(&all[..size as usize]);
            for index in 0..size {
                let path: Vec<Hash> =
                    inclusion_ranges(index, size).into_iter().map(|r| range_hash(&nodes, r)).collect();
                assert!(verify_inclusion(&all[index as usize], index, size, &path, &root), "{index} in {size}");
                if let Some(other) = all.get(index as usize + 1) {
                    assert!(!verify_inclusion(other, index, size, &path, &root));
                }
                if let Some((first, rest)) = path.split_first() {
                    let mut forged = vec![node_hash(first, first)];
                    forged.extend_from_slice(rest);
                    assert!(!verify_inclusion(&all[index as usize], index, size, &forged, &root));
                }
            }
            for old in 1..=size {
                let proof: Vec<Hash> =
                    consistency_ranges(old, size).into_iter().map(|r| range_hash(&nodes, r)).collect();
                let old_root = mth(&all[..old as usize]);
                assert!(verify_consistency(old, size, &proof, &old_root, &root), "{old} to {size}");
                if old < size {
                    assert!(!verify_consistency(old, size, &proof, &root, &root));
                }
            }
        }
    }

    #[test]
    fn cover_splits_a_range_into_aligned_perfect_subtrees() {
        assert_eq!(cover(0, 8), vec![NodeId { level: 3, index: 0 }]);
        assert_eq!(cover(8, 13), vec![NodeId { level: 2, index: 2 }, NodeId { level: 0, index: 12 }]);
        assert_eq!(from_hex(&to_hex(&empty_root())), Some(empty_root()));
        assert_eq!(from_hex("zz"), None);
    }
}
