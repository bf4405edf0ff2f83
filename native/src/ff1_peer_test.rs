//! FF1 against a second implementation, the `fpe` crate (zcash's, over the same `aes`): random keys
//! (16, 24, 32 bytes), radixes 2 to 65536, tweaks of 0 to 40 bytes and every length from the domain
//! rule's minimum up to 64 numerals plus a few long ones (the general path, b > 12), both directions,
//! 1 to 4 values of a length at a time (the rounds run them in lockstep).
//! VEIL_FF1_PEER_CASES sets how many (default 20,000; `npm run test:native-differential` raises it).
#![forbid(unsafe_code)]

use aes::{Aes128, Aes192, Aes256};
use fpe::ff1::{FlexibleNumeralString, FF1};

use crate::aes_key::AesKey;
use crate::ff1::Layout;
use crate::test_random::{cases, Random};

fn peer(key: &[u8], radix: u32, tweak: &[u8], x: &[u16], forward: bool) -> Vec<u16> {
    let ns = FlexibleNumeralString::from(x.to_vec());
    macro_rules! with {
        ($c:ty) => {{
            let ff = FF1::<$c>::new(key, radix).unwrap();
            if forward { ff.encrypt(tweak, &ns) } else { ff.decrypt(tweak, &ns) }.unwrap().into()
        }};
    }
    match key.len() {
        16 => with!(Aes128),
        24 => with!(Aes192),
        _ => with!(Aes256),
    }
}

const RADIXES: [u32; 12] = [2, 3, 10, 16, 26, 36, 62, 64, 255, 1000, 40000, 65536];

#[test]
fn agrees_with_the_fpe_crate() {
    let cases = cases("VEIL_FF1_PEER_CASES", 20_000);
    let mut random = Random::seeded("VEIL_FF1_PEER_SEED", 42);
    let (mut general, mut mismatches) = (0usize, 0usize);
    for case in 0..cases {
        let key_length = [16, 24, 32][random.below(3) as usize];
        let key = random.bytes(key_length);
        let radix = if random.below(4) == 0 {
            2 + random.below(65535) as u32
        } else {
            RADIXES[random.below(12) as usize]
        };
        let tweak_length = random.below(41) as usize;
        let tweak = random.bytes(tweak_length);
        let min = (2..).find(|&n| (radix as f64).powi(n as i32) >= 1_000_000.0).unwrap();
        // one case in 50 long enough for b > 12 (the BigUint path)
        let n = if case % 50 == 0 {
            min + 100 + random.below(300) as usize
        } else {
            min + random.below(64 - min.min(63) as u64) as usize
        };
        // 1 to 4 values of that length together: FF1's rounds run them in lockstep
        let group: Vec<Vec<u16>> = (0..1 + random.below(4))
            .map(|_| (0..n).map(|_| random.below(radix as u64) as u16).collect())
            .collect();
        let xs: Vec<&[u16]> = group.iter().map(|x| x.as_slice()).collect();
        let aes = AesKey::new(&key).unwrap();
        let layout = Layout::new(&aes, radix, &tweak, n);
        general += usize::from(!layout.fits_u128());
        let forward = random.below(2) == 0;
        let mut ours = Vec::new();
        layout.run(&aes, &xs, forward, &mut ours);
        let theirs: Vec<u16> = xs.iter().flat_map(|x| peer(&key, radix, &tweak, x, forward)).collect();
        let outs: Vec<&[u16]> = ours.chunks(n).collect();
        let mut back = Vec::new();
        layout.run(&aes, &outs, !forward, &mut back);
        if ours != theirs || back != group.concat() {
            mismatches += 1;
            eprintln!(
                "case {case}: radix {radix}, n {n}, {} key bytes, tweak {} bytes, forward {forward}",
                key.len(),
                tweak.len()
            );
        }
    }
    println!("FF1 against the fpe crate: {cases} cases ({general} on the general path), {mismatches} mismatches");
    assert_eq!(mismatches, 0);
    assert!(general * 100 >= cases, "the general path is exercised");
}
