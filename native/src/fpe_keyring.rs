//! The FPE keys of one process (FF1 and FF3-1), by id, and batches of numeral strings through them:
//! value i is `numerals[offsets[i]..offsets[i + 1]]`, and the output has the same offsets.
//! Key bytes cross in once (`add`) and stay here; FF1's per-length constants are cached per key.

use std::collections::HashMap;

use napi::bindgen_prelude::Uint16ArraySlice;
use napi::{Env, Result};
use napi_derive::napi;

use crate::aes_key::AesKey;
use crate::batch::Batch;
use crate::ff1::{Layout, MAX_NUMERALS};
use crate::keys::keyring;
use crate::{ff3_1, invalid};

/// FF1 layouts a key keeps (by radix, tweak and length) before it starts over: bounds the memory a stream of new tweaks can take.
const MAX_LAYOUTS: usize = 4096;
/// Values of one length whose FF1 rounds run together (their state fits the L1 cache).
const LOCKSTEP: usize = 256;

enum FpeKey {
    Ff1 {
        aes: AesKey,
        layouts: HashMap<Vec<u8>, HashMap<usize, Layout>>,
        count: usize,
    },
    Ff31 {
        aes: AesKey,
    },
}

keyring!(FpeKeyring, FpeKey, "FPE");

#[napi]
impl FpeKeyring {
    /// Adds (or replaces) a key of 16, 24 or 32 bytes for `mode` "ff1" or "ff3-1"; the caller should then fill its copy with zeros.
    #[napi]
    pub fn add(&mut self, key_id: String, mode: String, key: &[u8]) -> Result<()> {
        let bad_length = || invalid(format!("an {mode} key is 16, 24 or 32 bytes, not {}", key.len()));
        let entry = match mode.as_str() {
            "ff1" => FpeKey::Ff1 {
                aes: AesKey::new(key).ok_or_else(bad_length)?,
                layouts: HashMap::new(),
                count: 0,
            },
            "ff3-1" => FpeKey::Ff31 {
                aes: ff3_1::reversed_key(key).ok_or_else(bad_length)?,
            },
            _ => return Err(invalid("the FPE mode is \"ff1\" or \"ff3-1\"".to_string())),
        };
        self.keys.insert(key_id, entry);
        Ok(())
    }

    /// Encrypts every numeral string of the batch (each numeral below `radix`) under the key and tweak.
    #[napi]
    pub fn encrypt_many<'env>(
        &mut self,
        env: &'env Env,
        key_id: String,
        radix: u32,
        tweak: &[u8],
        numerals: &[u16],
        offsets: &[u32],
    ) -> Result<Uint16ArraySlice<'env>> {
        Uint16ArraySlice::copy_from(env, self.apply(&key_id, radix, tweak, numerals, offsets, true)?)
    }

    #[napi]
    pub fn decrypt_many<'env>(
        &mut self,
        env: &'env Env,
        key_id: String,
        radix: u32,
        tweak: &[u8],
        numerals: &[u16],
        offsets: &[u32],
    ) -> Result<Uint16ArraySlice<'env>> {
        Uint16ArraySlice::copy_from(env, self.apply(&key_id, radix, tweak, numerals, offsets, false)?)
    }
}

impl FpeKeyring {
    fn apply(&mut self, key_id: &str, radix: u32, tweak: &[u8], numerals: &[u16], offsets: &[u32], forward: bool) -> Result<Vec<u16>> {
        if !(2..=65536).contains(&radix) {
            return Err(invalid(format!("the radix is 2 to 65536, not {radix}")));
        }
        let batch = Batch::new(numerals, offsets).map_err(invalid)?;
        let key = self.keys.get_mut(key_id).map_err(invalid)?;
        let (mode, max) = match key {
            FpeKey::Ff1 { .. } => ("FF1", MAX_NUMERALS),
            FpeKey::Ff31 { .. } => ("FF3-1", ff3_1::max_length(radix)),
        };
        check_values(&batch, radix, max, mode)?;
        let mut out = Vec::with_capacity(numerals.len());
        match key {
            FpeKey::Ff1 { aes, layouts, count } => {
                let mut id = radix.to_be_bytes().to_vec();
                id.extend_from_slice(tweak);
                if *count >= MAX_LAYOUTS {
                    layouts.clear();
                    *count = 0;
                }
                let by_length = layouts.entry(id).or_default();
                // runs of consecutive values of one length go through FF1's rounds together
                let values: Vec<&[u16]> = batch.iter().collect();
                for run in values.chunk_by(|x, y| x.len() == y.len()) {
                    for group in run.chunks(LOCKSTEP) {
                        let layout = by_length.entry(group[0].len()).or_insert_with(|| {
                            *count += 1;
                            Layout::new(aes, radix, tweak, group[0].len())
                        });
                        layout.run(aes, group, forward, &mut out);
                    }
                }
            }
            FpeKey::Ff31 { aes } => {
                let tweak: &[u8; 7] = tweak
                    .try_into()
                    .map_err(|_| invalid(format!("an FF3-1 tweak is 56 bits (7 bytes), not {} bytes", tweak.len())))?;
                for x in batch.iter() {
                    ff3_1::run(aes, radix, tweak, x, forward, &mut out);
                }
            }
        }
        Ok(out)
    }
}

/// Every value has a length the mode takes (n >= 2, radix^n >= 1,000,000, n <= max) and numerals below the radix; errors name the value's index, never its numerals.
fn check_values(batch: &Batch<u16>, radix: u32, max: usize, mode: &str) -> Result<()> {
    let min = min_length(radix);
    for (i, x) in batch.iter().enumerate() {
        if x.len() < min || x.len() > max {
            return Err(invalid(format!(
                "value {i}: {mode} takes {min} to {max} numerals in radix {radix}, not {}",
                x.len()
            )));
        }
        if x.iter().any(|&d| d as u32 >= radix) {
            return Err(invalid(format!("value {i}: a numeral is not below the radix {radix}")));
        }
    }
    Ok(())
}

/// SP 800-38G's domain rule: the fewest numerals (at least 2) with radix^n >= 1,000,000.
fn min_length(radix: u32) -> usize {
    let (mut n, mut power) = (0usize, 1u64);
    while power < 1_000_000 || n < 2 {
        power *= radix as u64;
        n += 1;
    }
    n
}
