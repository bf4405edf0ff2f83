//! AES-SIV (RFC 5297) for batches: S2V over RustCrypto's `cmac`, the keystream from `ctr`, both on
//! the `aes` block (AES-NI where the CPU has it), the batched SIV veil's JavaScript engine writes too.
//!
//! A batch shares its associated data, so S2V's state after the associated data (D in RFC 5297
//! §2.4) is computed once per batch (`Prefix`); each value then costs one CMAC over its own bytes
//! and its keystream. Both keys are expanded once, when the key is added (the `aes-siv` crate
//! expands the CTR key and MACs the associated data again per value). Round keys zeroize on drop.
#![forbid(unsafe_code)]

use aes::cipher::{InnerIvInit, KeyInit, StreamCipher};
use aes::{Aes128, Aes192, Aes256};
use cmac::{Cmac, Mac};
use dbl::Dbl;
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

type Block = aes::Block;

const V: usize = 16;
/// RFC 5297 §2.6 allows n <= 126 associated-data components (the 127th vector slot is the plaintext).
const MAX_AD: usize = 126;

/// One AES-SIV key: K1 keys S2V's CMAC, K2 the CTR keystream.
pub enum SivKey {
    Aes128(Box<Siv128>),
    Aes192(Box<Siv192>),
    Aes256(Box<Siv256>),
}

/// S2V's CMAC (K1) and the CTR cipher (K2), each expanded once. A macro, not a generic: the
/// bounds `cmac` and `ctr` put on a generic cipher would outweigh the code they save.
macro_rules! siv {
    ($name:ident, $cipher:ty) => {
        pub struct $name {
            mac: Cmac<$cipher>,
            ctr: $cipher,
        }

        impl $name {
            fn new(k1: &[u8], k2: &[u8]) -> Option<Self> {
                Some($name {
                    mac: <Cmac<$cipher> as KeyInit>::new_from_slice(k1).ok()?,
                    ctr: <$cipher>::new_from_slice(k2).ok()?,
                })
            }

            fn cmac(&mut self, parts: &[&[u8]]) -> Block {
                parts.iter().for_each(|p| self.mac.update(p));
                self.mac.finalize_reset().into_bytes()
            }

            /// The keystream from Q = V with bits 63 and 31 cleared (RFC 5297 §2.5), XORed into `body`.
            fn ctr(&self, v: &Block, body: &mut [u8]) {
                let mut q = *v;
                q[8] &= 0x7f;
                q[12] &= 0x7f;
                ctr::Ctr128BE::from_core(ctr::CtrCore::inner_iv_init(self.ctr.clone(), &q)).apply_keystream(body);
            }
        }

        impl Sealer for $name {
            fn cmac(&mut self, parts: &[&[u8]]) -> Block {
                $name::cmac(self, parts)
            }
            fn ctr(&self, v: &Block, body: &mut [u8]) {
                $name::ctr(self, v, body)
            }
        }
    };
}

siv!(Siv128, Aes128);
siv!(Siv192, Aes192);
siv!(Siv256, Aes256);

/// S2V's D after a batch's associated data.
pub struct Prefix(Block);

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
        let half = key.len() / 2;
        Some(match key.len() {
            32 => SivKey::Aes128(Box::new(Siv128::new(&key[..half], &key[half..])?)),
            48 => SivKey::Aes192(Box::new(Siv192::new(&key[..half], &key[half..])?)),
            64 => SivKey::Aes256(Box::new(Siv256::new(&key[..half], &key[half..])?)),
            _ => return None,
        })
    }

    /// D after the associated data, shared by every value of a batch.
    pub fn prefix(&mut self, ad: &[&[u8]]) -> Result<Prefix, String> {
        if ad.len() > MAX_AD {
            return Err(format!("AES-SIV takes at most {MAX_AD} associated-data components, not {}", ad.len()));
        }
        Ok(each!(self, siv => siv.prefix(ad)))
    }

    /// Appends V || C of `plaintext` to `out`.
    pub fn seal_into(&mut self, prefix: &Prefix, plaintext: &[u8], out: &mut Vec<u8>) {
        each!(self, siv => siv.seal_into(prefix, plaintext, out))
    }

    /// Appends the plaintext of V || C to `out` and returns true; appends nothing and returns false when it does not authenticate.
    pub fn open_into(&mut self, prefix: &Prefix, sealed: &[u8], out: &mut Vec<u8>) -> bool {
        each!(self, siv => siv.open_into(prefix, sealed, out))
    }
}

/// SIV's steps over a key's two primitives; the three key sizes differ only in them.
trait Sealer {
    fn cmac(&mut self, parts: &[&[u8]]) -> Block;
    fn ctr(&self, v: &Block, body: &mut [u8]);

    fn prefix(&mut self, ad: &[&[u8]]) -> Prefix {
        let mut d = self.cmac(&[&[0u8; 16]]);
        for component in ad {
            d = d.dbl();
            xor(&mut d, &self.cmac(&[component]));
        }
        Prefix(d)
    }

    /// S2V's last step over the plaintext: CMAC(P xorend D) when |P| >= 16, else CMAC(dbl(D) xor pad(P)).
    fn s2v(&mut self, prefix: &Prefix, p: &[u8]) -> Block {
        if p.len() >= 16 {
            let (head, tail) = p.split_at(p.len() - 16);
            let mut last = prefix.0;
            xor(&mut last, tail);
            self.cmac(&[head, &last])
        } else {
            let mut t = prefix.0.dbl();
            xor(&mut t[..p.len()], p);
            t[p.len()] ^= 0x80;
            self.cmac(&[&t])
        }
    }

    fn seal_into(&mut self, prefix: &Prefix, plaintext: &[u8], out: &mut Vec<u8>) {
        let v = self.s2v(prefix, plaintext);
        out.extend_from_slice(&v);
        let at = out.len();
        out.extend_from_slice(plaintext);
        self.ctr(&v, &mut out[at..]);
    }

    fn open_into(&mut self, prefix: &Prefix, sealed: &[u8], out: &mut Vec<u8>) -> bool {
        if sealed.len() < V {
            return false;
        }
        let v = Block::clone_from_slice(&sealed[..V]);
        let at = out.len();
        out.extend_from_slice(&sealed[V..]);
        self.ctr(&v, &mut out[at..]);
        let ok: bool = self.s2v(prefix, &out[at..]).ct_eq(&v).into();
        if !ok {
            // the unauthenticated plaintext is wiped, not just cut off
            out[at..].zeroize();
            out.truncate(at);
        }
        ok
    }
}

fn xor(to: &mut [u8], from: &[u8]) {
    to.iter_mut().zip(from).for_each(|(t, f)| *t ^= f);
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
        let prefix = key.prefix(&[&ad]).unwrap();
        let pt = hex("112233445566778899aabbccddee");
        let mut out = Vec::new();
        key.seal_into(&prefix, &pt, &mut out);
        assert_eq!(out, hex("85632d07c6e8f37f950acd320a2ecc9340c02b9690c4dc04daef7f6afe5c"));
        let mut opened = Vec::new();
        assert!(key.open_into(&prefix, &out, &mut opened));
        assert_eq!(opened, pt);
        out[20] ^= 1;
        assert!(!key.open_into(&prefix, &out, &mut opened));
        assert_eq!(opened, pt, "a failed open appends nothing");
    }

    #[test]
    fn refuses_other_key_lengths_and_too_much_associated_data() {
        for n in [0, 16, 31, 33, 65] {
            assert!(SivKey::new(&vec![0u8; n]).is_none());
        }
        let mut key = SivKey::new(&[1u8; 32]).unwrap();
        assert!(key.prefix(&vec![&b"x"[..]; 126]).is_ok());
        assert!(key.prefix(&vec![&b"x"[..]; 127]).is_err());
    }
}
