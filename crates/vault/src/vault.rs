//! The credential vault cipher: AES-256-GCM, a fresh random 96-bit nonce per encryption, a key id in
//! every ciphertext so keys can rotate, and associated data binding each ciphertext to its owner.
//!
//! Ciphertext layout: `version (1) ‖ key id (8) ‖ nonce (12) ‖ AES-GCM ciphertext and tag`.
//! The associated data covers a context label, the version, the key id, the organization id, the owner
//! kind and the owner id (each length-prefixed, so `("ab","c")` and `("a","bc")` differ).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_ports::{CipherError, SecretOwner};
use secrecy::zeroize::Zeroizing;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

use crate::random::random_bytes;

const FORMAT_VERSION: u8 = 1;
const KEY_ID_LEN: usize = 8;
const NONCE_LEN: usize = 12;
const HEADER_LEN: usize = 1 + KEY_ID_LEN + NONCE_LEN;
// The crate it was first written in names both labels; every stored ciphertext is bound to them.
const AAD_CONTEXT: &[u8] = b"compliance-credentials/vault";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    #[error("a vault key must be 32 bytes in base64")]
    InvalidKey,
    #[error("the keyring holds the same key twice")]
    DuplicateKey,
    #[error("the ciphertext is too short or malformed")]
    Malformed,
    #[error("the ciphertext has unknown format version {0}")]
    UnsupportedVersion(u8),
    #[error("the ciphertext was made with a key that is not in the keyring")]
    UnknownKey,
    /// Tampered data, or a ciphertext of another organization or connection.
    #[error("the ciphertext does not decrypt for this organization and connection")]
    DecryptionFailed,
    #[error("encryption failed")]
    EncryptionFailed,
    #[error("the decrypted value is not UTF-8 text")]
    NotText,
}

/// Who a ciphertext belongs to. Decrypting under any other binding fails. `owner_kind` matches the
/// store's `StoredSecret::owner_kind` (`connection`, `oauth_app`, `oauth_state`, …), so a secret cannot
/// move between kinds of owner that happen to share an id.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    pub organization_id: &'a str,
    pub owner_kind: &'a str,
    pub owner_id: &'a str,
}

impl<'a> Binding<'a> {
    /// The binding of a connection's credentials.
    pub fn connection(organization_id: &'a str, connection_id: &'a str) -> Self {
        Self { organization_id, owner_kind: "connection", owner_id: connection_id }
    }
}

/// A 256-bit master key. Debug shows only the key id.
#[derive(Clone)]
pub struct Key {
    id: [u8; KEY_ID_LEN],
    bytes: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("id", &hex::encode(self.id)).finish_non_exhaustive()
    }
}

impl Key {
    pub fn generate() -> Self {
        Self::from_bytes(Zeroizing::new(random_bytes::<32>()))
    }

    /// 32 bytes in standard base64 (surrounding whitespace ignored, as in a key file).
    pub fn from_base64(text: &SecretString) -> Result<Self, VaultError> {
        let decoded = Zeroizing::new(STANDARD.decode(text.expose_secret().trim()).map_err(|_| VaultError::InvalidKey)?);
        let bytes: [u8; 32] = decoded.as_slice().try_into().map_err(|_| VaultError::InvalidKey)?;
        Ok(Self::from_bytes(Zeroizing::new(bytes)))
    }

    pub fn to_base64(&self) -> SecretString {
        SecretString::from(STANDARD.encode(*self.bytes))
    }

    /// The key id: derived from the key, so no one has to name keys, and a wrong key is recognised
    /// as unknown instead of failing as tampering. 64 bits of a hash reveal nothing usable.
    pub fn id(&self) -> String {
        hex::encode(self.id)
    }

    fn from_bytes(bytes: Zeroizing<[u8; 32]>) -> Self {
        let digest = Sha256::new().chain_update(b"compliance-credentials/key-id").chain_update(*bytes).finalize();
        let mut id = [0u8; KEY_ID_LEN];
        id.copy_from_slice(&digest[..KEY_ID_LEN]);
        Self { id, bytes }
    }

    fn cipher(&self) -> Result<Aes256Gcm, VaultError> {
        Aes256Gcm::new_from_slice(self.bytes.as_slice()).map_err(|_| VaultError::InvalidKey)
    }
}

/// The current key (encrypts) and older keys (still decrypt). Rotation: make a new keyring with a new
/// current key and the previous current key among the old ones, then re-encrypt what
/// [`Keyring::needs_reencryption`] points at.
#[derive(Debug, Clone)]
pub struct Keyring {
    current: Key,
    old: Vec<Key>,
}

impl Keyring {
    pub fn new(current: Key, old: Vec<Key>) -> Result<Self, VaultError> {
        let mut ids: Vec<[u8; KEY_ID_LEN]> = old.iter().map(|k| k.id).collect();
        ids.push(current.id);
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err(VaultError::DuplicateKey);
        }
        Ok(Self { current, old })
    }

    pub fn from_base64_keys(current: &SecretString, old: &[SecretString]) -> Result<Self, VaultError> {
        let old = old.iter().map(Key::from_base64).collect::<Result<Vec<_>, _>>()?;
        Self::new(Key::from_base64(current)?, old)
    }

    pub fn current_key_id(&self) -> String {
        self.current.id()
    }

    pub fn encrypt(&self, plaintext: &[u8], binding: Binding<'_>) -> Result<Vec<u8>, VaultError> {
        let nonce = random_bytes::<NONCE_LEN>();
        let aad = associated_data(self.current.id, binding);
        let sealed = self
            .current
            .cipher()?
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plaintext, aad: &aad })
            .map_err(|_| VaultError::EncryptionFailed)?;
        let mut out = Vec::with_capacity(HEADER_LEN + sealed.len());
        out.push(FORMAT_VERSION);
        out.extend_from_slice(&self.current.id);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    pub fn decrypt(&self, ciphertext: &[u8], binding: Binding<'_>) -> Result<Zeroizing<Vec<u8>>, VaultError> {
        let Parts { key_id, nonce, sealed } = split(ciphertext)?;
        let key = self.key(key_id)?;
        let aad = associated_data(key.id, binding);
        key.cipher()?
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: &aad })
            .map(Zeroizing::new)
            .map_err(|_| VaultError::DecryptionFailed)
    }

    pub fn encrypt_secret(&self, secret: &SecretString, binding: Binding<'_>) -> Result<Vec<u8>, VaultError> {
        self.encrypt(secret.expose_secret().as_bytes(), binding)
    }

    pub fn decrypt_secret(&self, ciphertext: &[u8], binding: Binding<'_>) -> Result<SecretString, VaultError> {
        let plain = self.decrypt(ciphertext, binding)?;
        let text = std::str::from_utf8(&plain).map_err(|_| VaultError::NotText)?;
        Ok(SecretString::from(text.to_owned()))
    }

    /// The id of the key a ciphertext was made with (for `StoredSecret::key_id`).
    pub fn key_id_of(ciphertext: &[u8]) -> Result<String, VaultError> {
        Ok(hex::encode(split(ciphertext)?.key_id))
    }

    /// True when the ciphertext is under an old key and should be re-encrypted with the current one.
    pub fn needs_reencryption(&self, ciphertext: &[u8]) -> Result<bool, VaultError> {
        let key_id = split(ciphertext)?.key_id;
        Ok(self.key(key_id)?.id != self.current.id)
    }

    fn key(&self, id: &[u8]) -> Result<&Key, VaultError> {
        std::iter::once(&self.current).chain(&self.old).find(|k| k.id == id).ok_or(VaultError::UnknownKey)
    }
}

/// The cipher the use cases seal their own secrets with (an automation's login secrets).
impl compliance_ports::SecretCipher for Keyring {
    fn current_key_id(&self) -> String {
        Keyring::current_key_id(self)
    }

    fn seal(&self, plaintext: &SecretString, owner: SecretOwner<'_>) -> Result<Vec<u8>, CipherError> {
        self.encrypt_secret(plaintext, binding_of(owner)).map_err(|_| CipherError("encrypt a secret"))
    }

    fn open(&self, ciphertext: &[u8], owner: SecretOwner<'_>) -> Result<SecretString, CipherError> {
        self.decrypt_secret(ciphertext, binding_of(owner)).map_err(|_| CipherError("decrypt a secret"))
    }
}

fn binding_of(owner: SecretOwner<'_>) -> Binding<'_> {
    Binding { organization_id: owner.organization_id.as_str(), owner_kind: owner.owner_kind, owner_id: owner.owner_id }
}

/// The parts of a ciphertext after its version byte.
struct Parts<'a> {
    key_id: &'a [u8],
    nonce: &'a [u8],
    sealed: &'a [u8],
}

fn split(ciphertext: &[u8]) -> Result<Parts<'_>, VaultError> {
    let (&version, rest) = ciphertext.split_first().ok_or(VaultError::Malformed)?;
    if version != FORMAT_VERSION {
        return Err(VaultError::UnsupportedVersion(version));
    }
    // 16 bytes of GCM tag follow the header even for an empty plaintext.
    if rest.len() < KEY_ID_LEN + NONCE_LEN + 16 {
        return Err(VaultError::Malformed);
    }
    let (key_id, rest) = rest.split_at(KEY_ID_LEN);
    let (nonce, sealed) = rest.split_at(NONCE_LEN);
    Ok(Parts { key_id, nonce, sealed })
}

fn associated_data(key_id: [u8; KEY_ID_LEN], binding: Binding<'_>) -> Vec<u8> {
    let mut aad = Vec::with_capacity(64);
    let parts: [&[u8]; 6] = [
        AAD_CONTEXT,
        &[FORMAT_VERSION],
        &key_id,
        binding.organization_id.as_bytes(),
        binding.owner_kind.as_bytes(),
        binding.owner_id.as_bytes(),
    ];
    for part in parts {
        aad.extend_from_slice(&(part.len() as u64).to_be_bytes());
        aad.extend_from_slice(part);
    }
    aad
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    const OWNER: Binding<'static> = Binding { organization_id: "org_1", owner_kind: "connection", owner_id: "con_1" };

    fn keyring() -> Keyring {
        Keyring::new(Key::generate(), Vec::new()).unwrap()
    }

    #[test]
    fn round_trip() {
        let ring = keyring();
        let sealed = ring.encrypt_secret(&"hunter2".into(), OWNER).unwrap();
        assert_eq!(ring.decrypt_secret(&sealed, OWNER).unwrap().expose_secret(), "hunter2");
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(sealed[0], FORMAT_VERSION);
        assert_eq!(hex::encode(&sealed[1..9]), ring.current_key_id());
        assert_eq!(Keyring::key_id_of(&sealed).unwrap(), ring.current_key_id());
    }

    #[test]
    fn another_organization_or_connection_cannot_decrypt() {
        let ring = keyring();
        let sealed = ring.encrypt(b"secret", OWNER).unwrap();
        let other_org = Binding { organization_id: "org_2", ..OWNER };
        let other_connection = Binding::connection("org_1", "con_2");
        let other_kind = Binding { owner_kind: "oauth_app", ..OWNER };
        let shifted = Binding { organization_id: "org_1c", owner_kind: "onnection", ..OWNER };
        assert!(ring.decrypt(&sealed, Binding::connection("org_1", "con_1")).is_ok());
        for binding in [other_org, other_connection, other_kind, shifted] {
            assert_eq!(ring.decrypt(&sealed, binding).unwrap_err(), VaultError::DecryptionFailed);
        }
    }

    #[test]
    fn any_tampered_byte_fails() {
        let ring = keyring();
        let sealed = ring.encrypt(b"secret", OWNER).unwrap();
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x01;
            assert!(ring.decrypt(&bad, OWNER).is_err(), "byte {i}");
        }
        assert_eq!(ring.decrypt(&sealed[..HEADER_LEN + 15], OWNER).unwrap_err(), VaultError::Malformed);
        assert_eq!(ring.decrypt(&[], OWNER).unwrap_err(), VaultError::Malformed);
        let mut version = sealed.clone();
        version[0] = 9;
        assert_eq!(ring.decrypt(&version, OWNER).unwrap_err(), VaultError::UnsupportedVersion(9));
    }

    #[test]
    fn unknown_key_id_fails() {
        let sealed = keyring().encrypt(b"secret", OWNER).unwrap();
        let other = keyring();
        assert_eq!(other.decrypt(&sealed, OWNER).unwrap_err(), VaultError::UnknownKey);
        assert_eq!(other.needs_reencryption(&sealed).unwrap_err(), VaultError::UnknownKey);
    }

    #[test]
    fn rotation_keeps_old_ciphertexts_readable() {
        let old_key = Key::generate();
        let before = Keyring::new(old_key.clone(), Vec::new()).unwrap();
        let sealed = before.encrypt(b"secret", OWNER).unwrap();
        assert!(!before.needs_reencryption(&sealed).unwrap());
        let after = Keyring::from_base64_keys(&Key::generate().to_base64(), &[old_key.to_base64()]).unwrap();
        assert_eq!(after.decrypt(&sealed, OWNER).unwrap().as_slice(), b"secret");
        assert!(after.needs_reencryption(&sealed).unwrap());
        let resealed = after.encrypt(b"secret", OWNER).unwrap();
        assert!(!after.needs_reencryption(&resealed).unwrap());
    }

    #[test]
    fn nonces_differ() {
        let ring = keyring();
        let a = ring.encrypt(b"same", OWNER).unwrap();
        let b = ring.encrypt(b"same", OWNER).unwrap();
        assert_ne!(a[9..HEADER_LEN], b[9..HEADER_LEN]);
        assert_ne!(a, b);
    }

    #[test]
    fn keys_load_from_base64_and_bad_keys_are_refused() {
        let key = Key::generate();
        let again = Key::from_base64(&format!("  {}\n", key.to_base64().expose_secret()).into()).unwrap();
        assert_eq!(again.id(), key.id());
        assert_eq!(Key::from_base64(&STANDARD.encode([0u8; 16]).into()).unwrap_err(), VaultError::InvalidKey);
        assert_eq!(Key::from_base64(&"not base64!".into()).unwrap_err(), VaultError::InvalidKey);
        assert!(!format!("{key:?}").contains(key.to_base64().expose_secret()));
        assert_eq!(Keyring::new(key.clone(), vec![again]).unwrap_err(), VaultError::DuplicateKey);
    }
}
