//! AES-SIV (RFC 5297) keys, over RustCrypto's `aes-siv` (CMAC-SIV on the `aes` crate, AES-NI where the CPU has it).
#![forbid(unsafe_code)]

use aes::Aes192;
use aes_siv::siv::{Aes128Siv, Aes256Siv, CmacSiv};
use aes_siv::{KeyInit, Tag};

/// One AES-SIV key. The `aes-siv` state zeroizes its key bytes when dropped.
pub enum SivKey {
    Aes128(Box<Aes128Siv>),
    Aes192(Box<CmacSiv<Aes192>>),
    Aes256(Box<Aes256Siv>),
}

const V: usize = 16;

macro_rules! each {
    ($key:expr, $siv:ident => $body:expr) => {
        match $key {
            SivKey::Aes128($siv) => $body,
            SivKey::Aes192($siv) => $body,
            SivKey::Aes256($siv) => $body,
        }
    };
}

impl SivKey {
    /// K1 || K2 of 32, 48 or 64 bytes; None for any other length.
    pub fn new(key: &[u8]) -> Option<SivKey> {
        Some(match key.len() {
            32 => SivKey::Aes128(Box::new(Aes128Siv::new_from_slice(key).ok()?)),
            48 => SivKey::Aes192(Box::new(CmacSiv::<Aes192>::new_from_slice(key).ok()?)),
            64 => SivKey::Aes256(Box::new(Aes256Siv::new_from_slice(key).ok()?)),
            _ => return None,
        })
    }

    /// Appends V || C of `plaintext` to `out`.
    pub fn seal_into(&mut self, ad: &[&[u8]], plaintext: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let at = out.len();
        out.resize(at + V, 0);
        out.extend_from_slice(plaintext);
        let body = &mut out[at + V..];
        let tag = each!(self, siv => siv.encrypt_in_place_detached(ad.iter(), body))
            .map_err(|_| format!("AES-SIV takes at most 126 associated-data components, not {}", ad.len()))?;
        out[at..at + V].copy_from_slice(&tag);
        Ok(())
    }

    /// Appends the plaintext of V || C to `out` and returns true; appends nothing and returns false when it does not authenticate.
    pub fn open_into(&mut self, ad: &[&[u8]], sealed: &[u8], out: &mut Vec<u8>) -> bool {
        if sealed.len() < V {
            return false;
        }
        let tag = Tag::clone_from_slice(&sealed[..V]);
        let at = out.len();
        out.extend_from_slice(&sealed[V..]);
        let ok = each!(self, siv => siv.decrypt_in_place_detached(ad.iter(), &mut out[at..], &tag)).is_ok();
        if !ok {
            out.truncate(at);
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::SivKey;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// RFC 5297 appendix A.1 (deterministic, one associated-data component)
    #[test]
    fn rfc5297_a1() {
        let mut key = SivKey::new(&hex("fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")).unwrap();
        let ad = hex("101112131415161718191a1b1c1d1e1f2021222324252627");
        let pt = hex("112233445566778899aabbccddee");
        let mut out = Vec::new();
        key.seal_into(&[&ad], &pt, &mut out).unwrap();
        assert_eq!(out, hex("85632d07c6e8f37f950acd320a2ecc9340c02b9690c4dc04daef7f6afe5c"));
        let mut opened = Vec::new();
        assert!(key.open_into(&[&ad], &out, &mut opened));
        assert_eq!(opened, pt);
        out[20] ^= 1;
        assert!(!key.open_into(&[&ad], &out, &mut opened));
        assert_eq!(opened, pt, "a failed open appends nothing");
    }

    #[test]
    fn refuses_other_key_lengths() {
        for n in [0, 16, 31, 33, 65] {
            assert!(SivKey::new(&vec![0u8; n]).is_none());
        }
    }
}
