//! veil's native protection core (issue 42), loaded by Node.js through napi-rs.
//!
//! Keys cross into the core once (`SivKeyring::add`) and never come back out. Values cross a batch
//! at a time, as one buffer and its offsets, so a chunk of records costs one N-API call instead of
//! one per value (a call is ~370 ns and a new Buffer ~1.8 µs: per-value calls lose the gain).
//! No `unsafe` of veil's own: the crypto and batch modules forbid it, and this binding module
//! denies it, so napi-derive's generated glue (which allows it for itself) is the only unsafe code.
#![deny(unsafe_code)]

mod aes_key;
mod batch;
mod ff1;
mod ff1_lockstep;
#[cfg(test)]
mod ff1_peer_test;
mod ff3_1;
mod fpe_keyring;
mod siv;
#[cfg(test)]
mod siv_peer_test;

use std::collections::HashMap;

use napi::bindgen_prelude::{Buffer, Uint32Array, Uint8Array};
use napi::{Error, Result, Status};
use napi_derive::napi;

use crate::batch::Batch;
use crate::siv::SivKey;

/// The AES-SIV keys of one process, by id. Their bytes stay here: zeroized when removed or dropped.
#[napi]
pub struct SivKeyring {
    keys: HashMap<String, SivKey>,
}

/// Opened values back to back (`offsets`, one more than values), and the indexes that failed to authenticate (their slot is empty).
#[napi(object)]
pub struct OpenedBatch {
    pub plaintexts: Buffer,
    pub offsets: Uint32Array,
    pub failed: Vec<u32>,
}

#[napi]
impl SivKeyring {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        SivKeyring { keys: HashMap::new() }
    }

    /// Adds (or replaces) a key: 32, 48 or 64 bytes, K1 (S2V) || K2 (CTR) as RFC 5297 writes them.
    /// The bytes are copied into the key's schedules; the caller should fill its own copy with zeros.
    #[napi]
    pub fn add(&mut self, key_id: String, key: Uint8Array) -> Result<()> {
        let siv = SivKey::new(&key).ok_or_else(|| invalid(format!("an AES-SIV key is 32, 48 or 64 bytes, not {}", key.len())))?;
        self.keys.insert(key_id, siv);
        Ok(())
    }

    /// Forgets a key (its schedules zeroized); true when it was there.
    #[napi]
    pub fn remove(&mut self, key_id: String) -> bool {
        self.keys.remove(&key_id).is_some()
    }

    #[napi(getter)]
    pub fn size(&self) -> u32 {
        self.keys.len() as u32
    }

    /// Seals value i, `values[offsets[i]..offsets[i + 1]]`, under the same associated data; returns
    /// each V || C back to back (value i starts at offsets[i] + 16 × i).
    #[napi]
    pub fn seal_many(&mut self, key_id: String, associated_data: Vec<Uint8Array>, values: Uint8Array, offsets: Uint32Array) -> Result<Buffer> {
        let batch = Batch::new(&values, &offsets).map_err(invalid)?;
        let key = self.key(&key_id)?;
        let ad: Vec<&[u8]> = associated_data.iter().map(|b| b.as_ref()).collect();
        let prefix = key.prefix(&ad).map_err(invalid)?;
        let mut out = Vec::with_capacity(values.len() + 16 * batch.len());
        for value in batch.iter() {
            key.seal_into(&prefix, value, &mut out);
        }
        Ok(out.into())
    }

    /// Opens each V || C (`sealed[offsets[i]..offsets[i + 1]]`) under the associated data.
    #[napi]
    pub fn open_many(&mut self, key_id: String, associated_data: Vec<Uint8Array>, sealed: Uint8Array, offsets: Uint32Array) -> Result<OpenedBatch> {
        let batch = Batch::new(&sealed, &offsets).map_err(invalid)?;
        let key = self.key(&key_id)?;
        let ad: Vec<&[u8]> = associated_data.iter().map(|b| b.as_ref()).collect();
        let prefix = key.prefix(&ad).map_err(invalid)?;
        let mut plaintexts = Vec::with_capacity(sealed.len());
        let mut ends = Vec::with_capacity(batch.len() + 1);
        let mut failed = Vec::new();
        ends.push(0u32);
        for (i, value) in batch.iter().enumerate() {
            if !key.open_into(&prefix, value, &mut plaintexts) {
                failed.push(i as u32);
            }
            ends.push(plaintexts.len() as u32);
        }
        Ok(OpenedBatch {
            plaintexts: plaintexts.into(),
            offsets: ends.into(),
            failed,
        })
    }

    fn key(&mut self, key_id: &str) -> Result<&mut SivKey> {
        // the id is not echoed: a subject's key may be named by the subject, which is personal data
        self.keys
            .get_mut(key_id)
            .ok_or_else(|| invalid("no AES-SIV key of that id in this keyring".to_string()))
    }
}

pub(crate) fn invalid(message: String) -> Error {
    Error::new(Status::InvalidArg, message)
}
