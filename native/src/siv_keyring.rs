//! The AES-SIV keys of one process and batches of values through them (`siv.rs`).

use napi::bindgen_prelude::BufferSlice;
use napi::Env;
use napi::Result;
use napi_derive::napi;

use crate::batch::Batch;
use crate::keys::keyring;
use crate::siv::SivKey;
use crate::{invalid, OpenedBatch};

keyring!(
    /// The AES-SIV keys of one process, by id. Their bytes stay here: zeroized when removed or dropped.
    SivKeyring,
    SivKey,
    "AES-SIV"
);

#[napi]
impl SivKeyring {
    /// Adds (or replaces) a key: 32, 48 or 64 bytes, K1 (S2V) || K2 (CTR) as RFC 5297 writes them.
    /// The bytes are copied into the key's schedules; the caller should fill its own copy with zeros.
    #[napi]
    pub fn add(&mut self, key_id: String, key: &[u8]) -> Result<()> {
        let siv = SivKey::new(key).ok_or_else(|| invalid(format!("an AES-SIV key is 32, 48 or 64 bytes, not {}", key.len())))?;
        self.keys.insert(key_id, siv);
        Ok(())
    }

    /// Seals value i, `values[offsets[i]..offsets[i + 1]]`, under the same associated data; returns
    /// each V || C back to back (value i starts at offsets[i] + 16 × i).
    #[napi]
    pub fn seal_many<'env>(
        &mut self,
        env: &'env Env,
        key_id: String,
        associated_data: Vec<&[u8]>,
        values: &[u8],
        offsets: &[u32],
    ) -> Result<BufferSlice<'env>> {
        let batch = Batch::new(values, offsets).map_err(invalid)?;
        let key = self.keys.get_mut(&key_id).map_err(invalid)?;
        let prefix = key.prefix(&associated_data).map_err(invalid)?;
        let mut out = Vec::with_capacity(values.len() + 16 * batch.len());
        for value in batch.iter() {
            key.seal_into(&prefix, value, &mut out);
        }
        BufferSlice::copy_from(env, &out)
    }

    /// Opens each V || C (`sealed[offsets[i]..offsets[i + 1]]`) under the associated data.
    #[napi]
    pub fn open_many(&mut self, key_id: String, associated_data: Vec<&[u8]>, sealed: &[u8], offsets: &[u32]) -> Result<OpenedBatch> {
        let batch = Batch::new(sealed, offsets).map_err(invalid)?;
        let key = self.keys.get_mut(&key_id).map_err(invalid)?;
        let prefix = key.prefix(&associated_data).map_err(invalid)?;
        Ok(OpenedBatch::of(&batch, |value, out| key.open_into(&prefix, value, out)))
    }
}
