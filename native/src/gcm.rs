//! AES-GCM (NIST SP 800-38D) keys over RustCrypto's `aes-gcm`, 96-bit nonces and 128-bit tags, as
//! veil's aes-gcm transformer writes them: a sealed value is nonce || C || tag. The nonce comes from
//! the caller (veil's random source, one call per chunk), so the core holds no random state.
#![forbid(unsafe_code)]

use aes::Aes192;
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm, Nonce, Tag};

pub const NONCE: usize = 12;
pub const TAG: usize = 16;

/// One AES-GCM key; its round keys and GHASH key zeroize on drop (`aes`'s and `polyval`'s `zeroize`).
pub enum GcmKey {
    Aes128(Box<Aes128Gcm>),
    Aes192(Box<AesGcm<Aes192, U12>>),
    Aes256(Box<Aes256Gcm>),
}

macro_rules! each {
    ($key:expr, $gcm:ident => $body:expr) => {
        match $key {
            GcmKey::Aes128($gcm) => $body,
            GcmKey::Aes192($gcm) => $body,
            GcmKey::Aes256($gcm) => $body,
        }
    };
}

impl GcmKey {
    /// 16, 24 or 32 bytes; None for any other length.
    pub fn new(key: &[u8]) -> Option<GcmKey> {
        Some(match key.len() {
            16 => GcmKey::Aes128(Box::new(Aes128Gcm::new_from_slice(key).ok()?)),
            24 => GcmKey::Aes192(Box::new(AesGcm::<Aes192, U12>::new_from_slice(key).ok()?)),
            32 => GcmKey::Aes256(Box::new(Aes256Gcm::new_from_slice(key).ok()?)),
            _ => return None,
        })
    }

    /// Appends nonce || C || tag of `plaintext` to `out`.
    pub fn seal_into(&self, nonce: &[u8], aad: &[u8], plaintext: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.extend_from_slice(nonce);
        let at = out.len();
        out.extend_from_slice(plaintext);
        let nonce = Nonce::from_slice(nonce);
        let tag = each!(self, gcm => gcm.encrypt_in_place_detached(nonce, aad, &mut out[at..]))
            .map_err(|_| "AES-GCM takes at most 2^36 - 32 bytes of plaintext".to_string())?;
        out.extend_from_slice(&tag);
        Ok(())
    }

    /// Appends the plaintext of nonce || C || tag to `out` and returns true; appends nothing (and wipes what it decrypted) when it does not authenticate.
    pub fn open_into(&self, aad: &[u8], sealed: &[u8], out: &mut Vec<u8>) -> bool {
        if sealed.len() < NONCE + TAG {
            return false;
        }
        let (nonce, rest) = sealed.split_at(NONCE);
        let (body, tag) = rest.split_at(rest.len() - TAG);
        let at = out.len();
        out.extend_from_slice(body);
        let (nonce, tag) = (Nonce::from_slice(nonce), Tag::from_slice(tag));
        // aes-gcm checks the tag before it decrypts and leaves the buffer as it was on failure: only ciphertext is there to drop
        let ok = each!(self, gcm => gcm.decrypt_in_place_detached(nonce, aad, &mut out[at..], tag)).is_ok();
        if !ok {
            out.truncate(at);
        }
        ok
    }
}
