//! The batched SIV against a second implementation, the `aes-siv` crate (RustCrypto's, per value):
//! random keys (32, 48, 64 bytes), 0 to 6 associated-data components, plaintexts of 0 to 100 bytes,
//! every value of a batch under one prefix; and every tampered byte refused. VEIL_SIV_PEER_CASES sets
//! how many batches (default 2,000; `npm run test:native-differential` raises it).
#![forbid(unsafe_code)]

use aes::Aes192;
use aes_siv::siv::{Aes128Siv, Aes256Siv, CmacSiv};
use aes_siv::KeyInit;

use crate::siv::SivKey;
use crate::test_random::{cases, Random};

fn peer(key: &[u8], ad: &[Vec<u8>], plaintext: &[u8]) -> Vec<u8> {
    match key.len() {
        32 => Aes128Siv::new_from_slice(key).unwrap().encrypt(ad, plaintext),
        48 => CmacSiv::<Aes192>::new_from_slice(key).unwrap().encrypt(ad, plaintext),
        _ => Aes256Siv::new_from_slice(key).unwrap().encrypt(ad, plaintext),
    }
    .unwrap()
}

#[test]
fn agrees_with_the_aes_siv_crate() {
    let batches = cases("VEIL_SIV_PEER_CASES", 2_000);
    let mut random = Random::seeded("VEIL_SIV_PEER_SEED", 42);
    let (mut values, mut mismatches, mut tampered_opened) = (0usize, 0usize, 0usize);
    for _ in 0..batches {
        let key_length = [32, 48, 64][random.below(3) as usize];
        let key = random.bytes(key_length);
        let components = random.below(7) as usize;
        let ad: Vec<Vec<u8>> = (0..components)
            .map(|_| {
                let n = random.below(40) as usize;
                random.bytes(n)
            })
            .collect();
        let ad_refs: Vec<&[u8]> = ad.iter().map(|a| a.as_slice()).collect();
        let mut ours = SivKey::new(&key).unwrap();
        let prefix = ours.prefix(&ad_refs).unwrap();
        for _ in 0..1 + random.below(20) {
            let length = random.below(101) as usize;
            let plaintext = random.bytes(length);
            let mut sealed = Vec::new();
            ours.seal_into(&prefix, &plaintext, &mut sealed);
            let mut opened = Vec::new();
            if sealed != peer(&key, &ad, &plaintext) || !ours.open_into(&prefix, &sealed, &mut opened) || opened != plaintext {
                mismatches += 1;
            }
            let at = random.below(sealed.len() as u64) as usize;
            sealed[at] ^= 1 << random.below(8);
            tampered_opened += usize::from(ours.open_into(&prefix, &sealed, &mut Vec::new()));
            values += 1;
        }
    }
    println!("AES-SIV against the aes-siv crate: {values} values in {batches} batches, {mismatches} mismatches, {tampered_opened} tampered values opened");
    assert_eq!((mismatches, tampered_opened), (0, 0));
}
