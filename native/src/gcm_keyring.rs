//! The AES-GCM keys of one process and batches of values through them (`gcm.rs`).

use napi::bindgen_prelude::BufferSlice;
use napi::{Env, Result};
use napi_derive::napi;

use crate::batch::Batch;
use crate::gcm::{GcmKey, NONCE, TAG};
use crate::keys::keyring;
use crate::{invalid, OpenedBatch};

keyring!(
    /// The AES-GCM keys of one process, by id. Their bytes stay here: zeroized when removed or dropped.
    GcmKeyring,
    GcmKey,
    "AES-GCM"
);

#[napi]
impl GcmKeyring {
    /// Adds (or replaces) a key of 16, 24 or 32 bytes; the caller should then fill its copy with zeros.
    #[napi]
    pub fn add(&mut self, key_id: String, key: &[u8]) -> Result<()> {
        let gcm = GcmKey::new(key).ok_or_else(|| invalid(format!("an AES-GCM key is 16, 24 or 32 bytes, not {}", key.len())))?;
        self.keys.insert(key_id, gcm);
        Ok(())
    }

    /// Seals value i under nonce i (`nonces[12 × i..12 × (i + 1)]`, fresh random bytes from the
    /// caller) and the batch's associated data; returns each nonce || C || tag back to back
    /// (value i starts at offsets[i] + 28 × i).
    #[napi]
    pub fn seal_many<'env>(&mut self, env: &'env Env, key_id: String, aad: &[u8], nonces: &[u8], values: &[u8], offsets: &[u32]) -> Result<BufferSlice<'env>> {
        let batch = Batch::new(values, offsets).map_err(invalid)?;
        if nonces.len() != NONCE * batch.len() {
            return Err(invalid(format!(
                "{} values take {} nonce bytes, not {}",
                batch.len(),
                NONCE * batch.len(),
                nonces.len()
            )));
        }
        let key = self.keys.get_mut(&key_id).map_err(invalid)?;
        let mut out = Vec::with_capacity(values.len() + (NONCE + TAG) * batch.len());
        for (value, nonce) in batch.iter().zip(nonces.chunks_exact(NONCE)) {
            key.seal_into(nonce, aad, value, &mut out).map_err(invalid)?;
        }
        BufferSlice::copy_from(env, &out)
    }

    /// Opens each nonce || C || tag (`sealed[offsets[i]..offsets[i + 1]]`) under the associated data.
    #[napi]
    pub fn open_many(&mut self, key_id: String, aad: &[u8], sealed: &[u8], offsets: &[u32]) -> Result<OpenedBatch> {
        let batch = Batch::new(sealed, offsets).map_err(invalid)?;
        let key = self.keys.get_mut(&key_id).map_err(invalid)?;
        Ok(OpenedBatch::of(&batch, |value, out| key.open_into(aad, value, out)))
    }
}
