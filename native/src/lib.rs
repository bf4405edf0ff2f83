//! veil's native protection core (issue 42), loaded by Node.js through napi-rs.
//!
//! Keys cross into the core once (each keyring's `add`) and never come back out. Values cross a
//! batch at a time, as one buffer and its offsets, so a chunk of records costs one N-API call
//! instead of one per value (a call is ~370 ns and a new Buffer ~1.8 µs: per-value calls lose the
//! gain). The keyrings (`*_keyring.rs`) are the binding; the modes and batches below them forbid
//! `unsafe`, and the crate denies it, so napi-derive's generated glue (which allows it for itself)
//! is the only unsafe code.
#![deny(unsafe_code)]

mod aes_key;
mod batch;
mod ff1;
mod ff1_lockstep;
#[cfg(test)]
mod ff1_peer_test;
mod ff3_1;
mod fpe_keyring;
mod gcm;
mod gcm_keyring;
mod hmac_keyring;
mod json_lex;
mod json_scan;
mod json_scanner;
mod keys;
mod siv;
mod siv_keyring;
#[cfg(test)]
mod siv_peer_test;
#[cfg(test)]
mod test_random;

use napi::bindgen_prelude::{Buffer, Uint32Array};
use napi::{Error, Status};
use napi_derive::napi;

/// Opened values back to back (`offsets`, one more than values), and the indexes that failed to authenticate (their slot is empty).
#[napi(object)]
pub struct OpenedBatch {
    pub plaintexts: Buffer,
    pub offsets: Uint32Array,
    pub failed: Vec<u32>,
}

impl OpenedBatch {
    /// Opens each value of the batch with `open` (which appends a plaintext and says whether it authenticated): the plaintexts back to back, their offsets, the failures.
    pub(crate) fn of(batch: &batch::Batch, mut open: impl FnMut(&[u8], &mut Vec<u8>) -> bool) -> OpenedBatch {
        let mut plaintexts = Vec::new();
        let mut ends = Vec::with_capacity(batch.len() + 1);
        let mut failed = Vec::new();
        ends.push(0u32);
        for (i, value) in batch.iter().enumerate() {
            if !open(value, &mut plaintexts) {
                failed.push(i as u32);
            }
            ends.push(plaintexts.len() as u32);
        }
        OpenedBatch {
            plaintexts: plaintexts.into(),
            offsets: ends.into(),
            failed,
        }
    }
}

pub(crate) fn invalid(message: String) -> Error {
    Error::new(Status::InvalidArg, message)
}
