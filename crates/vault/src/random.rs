//! Random bytes from the operating system's generator (through `rand`'s thread-local CSPRNG).

use rand::RngCore;

pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}
