"""Checks the audit log's signed tree heads and proofs with implementations that are not ours.

Reads, on stdin, JSON from tests/api/audit_proofs.rs:
  {"leaves": [hex leaf hash of entry 1, 2, ...],
   "heads": [{"treeSize", "rootHash", "publicKey", "signature", "checkpoint"}],
   "inclusion": [{"seq", "treeSize", "leafHash", "auditPath"}],
   "consistency": [{"from", "to", "proof"}]}
and checks, with pymerkle (an RFC 9162 Merkle tree) and cryptography's Ed25519:
  - each head's signature over its checkpoint text, with its public key, and that the checkpoint
    names its size and root; pymerkle's root of the first treeSize leaves is the head's root;
  - each inclusion proof: its path is pymerkle's own for that leaf and size, and pymerkle's
    verifier accepts it against pymerkle's root (and refuses it with one byte changed);
  - each consistency proof: pymerkle proves the same two sizes consistent with its own proof
    (whose path has a shape of its own, so it is not compared), and ours passes RFC 9162
    section 2.1.4.2's verification, written out below from the RFC, against pymerkle's roots.
Prints "ok N" (N checks) or raises.
"""

import base64
import hashlib
import json
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pymerkle import InmemoryTree, verify_consistency, verify_inclusion
from pymerkle.proof import InvalidProof, MerkleProof


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def rfc9162_consistent(first, second, proof, first_root, second_root):
    """RFC 9162, 2.1.4.2, step by step."""
    if first == second:
        return not proof and first_root == second_root
    if first & (first - 1) == 0:
        proof = [first_root] + proof
    if not proof:
        return False
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == first_root and sr == second_root and sn == 0


class LeafHashTree(InmemoryTree):
    """A pymerkle tree whose entries are leaf hashes already (the server's `hash` of each entry)."""

    def _encode_entry(self, data):
        return data

    def _hash_entry(self, data):
        return data


def main():
    given = json.load(sys.stdin)
    tree = LeafHashTree(algorithm="sha256")
    for leaf in given["leaves"]:
        tree.append_entry(bytes.fromhex(leaf))
    checks = 0

    for head in given["heads"]:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(head["publicKey"]))
        key.verify(base64.b64decode(head["signature"]), head["checkpoint"].encode())
        lines = head["checkpoint"].split("\n")
        assert lines[1] == str(head["treeSize"]), lines
        assert base64.b64decode(lines[2]).hex() == head["rootHash"], lines
        assert tree.get_state(head["treeSize"]).hex() == head["rootHash"], head
        checks += 1

    for proof in given["inclusion"]:
        seq, size, leaf = proof["seq"], proof["treeSize"], bytes.fromhex(proof["leafHash"])
        assert given["leaves"][seq - 1] == proof["leafHash"], proof
        theirs = tree.prove_inclusion(seq, size)
        assert [h.hex() for h in theirs.path[1:]] == proof["auditPath"], (seq, size)
        ours = MerkleProof("sha256", True, size, theirs.rule, [], [leaf] + [bytes.fromhex(h) for h in proof["auditPath"]])
        root = tree.get_state(size)
        verify_inclusion(leaf, root, ours)
        if proof["auditPath"]:
            bad = [bytearray(h) for h in ours.path]
            bad[-1][0] ^= 1
            forged = MerkleProof("sha256", True, size, theirs.rule, [], [bytes(h) for h in bad])
            try:
                verify_inclusion(leaf, root, forged)
                raise AssertionError(f"a forged path for entry {seq} verified")
            except InvalidProof:
                pass
        checks += 1

    for proof in given["consistency"]:
        old, new = proof["from"], proof["to"]
        old_root, new_root = tree.get_state(old), tree.get_state(new)
        verify_consistency(old_root, new_root, tree.prove_consistency(old, new))
        hashes = [bytes.fromhex(h) for h in proof["proof"]]
        assert rfc9162_consistent(old, new, hashes, old_root, new_root), (old, new)
        if hashes:
            forged = [hashes[0][:-1] + bytes([hashes[0][-1] ^ 1])] + hashes[1:]
            assert not rfc9162_consistent(old, new, forged, old_root, new_root), (old, new)
        checks += 1

    print(f"ok {checks}")


if __name__ == "__main__":
    main()
