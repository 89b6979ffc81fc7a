//! The credential vault: the `SecretCipher` port on AES-256-GCM (a key id in every ciphertext so
//! keys can rotate, associated data binding each ciphertext to its organization and owner), the
//! vault's keys (`VAULT_KEY`, `VAULT_OLD_KEYS`, or a key file generated under `DATA_DIR`), and the
//! re-encryption of every stored secret under a new key.
//!
//! ```
//! use compliance_vault::{Binding, Key, Keyring};
//! use secrecy::ExposeSecret;
//!
//! let keyring = Keyring::new(Key::generate(), Vec::new())?;
//! let owner = Binding::connection("org_1", "con_1");
//! let sealed = keyring.encrypt_secret(&"k-123".into(), owner)?;
//! assert_eq!(keyring.decrypt_secret(&sealed, owner)?.expose_secret(), "k-123");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Layout: `version ‖ key id (8) ‖ nonce (12) ‖ ciphertext+tag`; the key id is the first 8 bytes of
//! SHA-256 over a label and the key, so keys need no names; the AAD is a label, the version, the key
//! id, the organization id, the owner kind (`connection`, `oauth_app`, …) and the owner id, each
//! length-prefixed. aes-gcm 0.10 (the released aead 0.5 API) with nonces and keys from `rand`'s
//! OS-seeded generator.

mod random;
pub mod rotation;
pub mod vault;
pub mod vault_keys;

pub use rotation::{RotationError, RotationReport, reencrypt_all};
pub use vault::{Binding, Key, Keyring, VaultError};
pub use vault_keys::{KeyLoadError, KeySource, add_current_key, load_keyring};
