//! One AES key of 16, 24 or 32 bytes over RustCrypto's `aes` (AES-NI where the CPU has it), for the
//! modes veil writes itself (FF1, FF3-1). The round keys zeroize when dropped (`aes`'s `zeroize`).
#![forbid(unsafe_code)]

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::{Aes128, Aes192, Aes256, Block};

pub enum AesKey {
    Aes128(Box<Aes128>),
    Aes192(Box<Aes192>),
    Aes256(Box<Aes256>),
}

impl AesKey {
    /// None for a length other than 16, 24 or 32 bytes.
    pub fn new(key: &[u8]) -> Option<AesKey> {
        Some(match key.len() {
            16 => AesKey::Aes128(Box::new(Aes128::new_from_slice(key).ok()?)),
            24 => AesKey::Aes192(Box::new(Aes192::new_from_slice(key).ok()?)),
            32 => AesKey::Aes256(Box::new(Aes256::new_from_slice(key).ok()?)),
            _ => return None,
        })
    }

    /// CIPH_K(block), in place.
    pub fn encrypt(&self, block: &mut [u8; 16]) {
        let b = Block::from_mut_slice(block);
        match self {
            AesKey::Aes128(k) => k.encrypt_block(b),
            AesKey::Aes192(k) => k.encrypt_block(b),
            AesKey::Aes256(k) => k.encrypt_block(b),
        }
    }

    /// CIPH_K of each block, in place: independent blocks, which AES-NI pipelines.
    pub fn encrypt_blocks(&self, blocks: &mut [Block]) {
        match self {
            AesKey::Aes128(k) => k.encrypt_blocks(blocks),
            AesKey::Aes192(k) => k.encrypt_blocks(blocks),
            AesKey::Aes256(k) => k.encrypt_blocks(blocks),
        }
    }
}
