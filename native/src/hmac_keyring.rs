//! The HMAC-SHA256 keys of one process (RFC 2104, FIPS 198-1, over RustCrypto's `hmac` and `sha2`)
//! and batches of values through them, as veil's hmac-sha256 transformer computes its pseudonyms:
//! HMAC(key, prefix || value) cut to 16..32 bytes, the prefix (header || label) shared by the batch.

use hmac::{Hmac, Mac};
use napi::bindgen_prelude::BufferSlice;
use napi::{Env, Result};
use napi_derive::napi;
use sha2::Sha256;

use crate::batch::Batch;
use crate::invalid;
use crate::keys::keyring;

keyring!(
    /// The HMAC-SHA256 keys of one process, by id. A key is held as its keyed HMAC state (the inner and
    /// outer pads' SHA-256 states): `sha2` 0.10 has no zeroize, so that state is not wiped on drop.
    HmacKeyring,
    Hmac<Sha256>,
    "HMAC-SHA256"
);

#[napi]
impl HmacKeyring {
    /// Adds (or replaces) a key of at least one byte; the caller should then fill its copy with zeros.
    #[napi]
    pub fn add(&mut self, key_id: String, key: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Err(invalid("an HMAC-SHA256 key is at least 1 byte".to_string()));
        }
        let mac = <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(|_| invalid("an HMAC-SHA256 key is at least 1 byte".to_string()))?;
        self.keys.insert(key_id, mac);
        Ok(())
    }

    /// HMAC(key, prefix || value i) cut to `tag_bytes` (16..32) for each value; the tags back to back.
    #[napi]
    pub fn mac_many<'env>(
        &mut self,
        env: &'env Env,
        key_id: String,
        prefix: &[u8],
        values: &[u8],
        offsets: &[u32],
        tag_bytes: u32,
    ) -> Result<BufferSlice<'env>> {
        if !(16..=32).contains(&tag_bytes) {
            return Err(invalid(format!("an HMAC-SHA256 tag is 16 to 32 bytes, not {tag_bytes}")));
        }
        let batch = Batch::new(values, offsets).map_err(invalid)?;
        let key = self.keys.get_mut(&key_id).map_err(invalid)?;
        // the state after the prefix is computed once: each value costs its own blocks and the outer hash
        let mut after_prefix = key.clone();
        after_prefix.update(prefix);
        let mut out = Vec::with_capacity(tag_bytes as usize * batch.len());
        for value in batch.iter() {
            let mut mac = after_prefix.clone();
            mac.update(value);
            out.extend_from_slice(&mac.finalize().into_bytes()[..tag_bytes as usize]);
        }
        BufferSlice::copy_from(env, &out)
    }
}
