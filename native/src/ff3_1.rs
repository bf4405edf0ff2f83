//! FF3-1 (NIST SP 800-38G Rev. 1 §5.2), kept for data shared with systems that use it, as in
//! veil's JavaScript engine (`src/engine/crypto/ff3-1.ts`): 8 rounds, a 56-bit tweak, the key's
//! bytes reversed before AES. maxlen = 2 · floor(log_radix(2^96)), so every half fits 96 bits and
//! the rounds run on u128s.
#![forbid(unsafe_code)]

use zeroize::Zeroizing;

use crate::aes_key::AesKey;

/// CIPH_REVB(K): the AES key made from the key's bytes reversed.
pub fn reversed_key(key: &[u8]) -> Option<AesKey> {
    let reversed = Zeroizing::new(key.iter().rev().copied().collect::<Vec<u8>>());
    AesKey::new(&reversed)
}

/// The largest n FF3-1 takes in this radix: 2 · (the largest k with radix^k <= 2^96), counted exactly.
pub fn max_length(radix: u32) -> usize {
    let (mut k, mut power) = (0usize, 1u128);
    while let Some(next) = power.checked_mul(radix as u128).filter(|p| *p <= 1u128 << 96) {
        power = next;
        k += 1;
    }
    2 * k
}

/// Encrypts (forward) or decrypts `x` into `out`; the caller has checked radix, tweak (7 bytes), n (domain rule and maxlen) and the numerals.
pub fn run(aes: &AesKey, radix: u32, tweak: &[u8; 7], x: &[u16], forward: bool, out: &mut Vec<u16>) {
    let n = x.len();
    let (u, v) = (n.div_ceil(2), n / 2);
    let tl = [tweak[0], tweak[1], tweak[2], tweak[3] & 0xf0];
    let tr = [tweak[4], tweak[5], tweak[6], (tweak[3] & 0x0f) << 4];
    let (mu, mv) = ((radix as u128).pow(u as u32), (radix as u128).pow(v as u32));
    // the spec works on NUM_radix(REV(A)) and NUM_radix(REV(B)): each half read last numeral first
    let mut a = num_reversed(&x[..u], radix);
    let mut b = num_reversed(&x[u..], radix);
    for r in 0..8u8 {
        let i = if forward { r } else { 7 - r };
        let (m, w) = if i % 2 == 0 { (mu, &tr) } else { (mv, &tl) };
        // the halves and y mod m are below m <= 2^96: the sum's reduction is one conditional subtraction
        if forward {
            let c = a + prf(aes, w, i, b) % m;
            (a, b) = (b, if c >= m { c - m } else { c });
        } else {
            let c = b + m - prf(aes, w, i, a) % m;
            (b, a) = (a, if c >= m { c - m } else { c });
        }
    }
    str_reversed(a, radix, u, out);
    str_reversed(b, radix, v, out);
}

/// y = NUM(REVB(CIPH_REVB(K)(REVB(P)))), P = (W ⊕ [i]^4) || [NUM_radix(REV(B))]^12.
fn prf(aes: &AesKey, w: &[u8; 4], i: u8, num: u128) -> u128 {
    let mut p = [0u8; 16];
    p[..4].copy_from_slice(w);
    p[3] ^= i;
    p[4..].copy_from_slice(&num.to_be_bytes()[4..]);
    p.reverse();
    aes.encrypt(&mut p);
    u128::from_le_bytes(p)
}

fn num_reversed(x: &[u16], radix: u32) -> u128 {
    x.iter().rev().fold(0u128, |acc, &d| acc * radix as u128 + d as u128)
}

/// REV(STR^m_radix(value)): the least significant numeral first.
fn str_reversed(mut value: u128, radix: u32, m: usize, out: &mut Vec<u16>) {
    for _ in 0..m {
        out.push((value % radix as u128) as u16);
        value /= radix as u128;
    }
}

#[cfg(test)]
mod tests {
    use super::{max_length, reversed_key, run};

    #[test]
    fn max_length_matches_the_spec() {
        assert_eq!(max_length(10), 56);
        assert_eq!(max_length(2), 192);
        assert_eq!(max_length(16), 48);
        assert_eq!(max_length(36), 36);
        assert_eq!(max_length(65536), 12);
    }

    #[test]
    fn round_trip() {
        let key = reversed_key(&[7u8; 16]).unwrap();
        let tweak = [1, 2, 3, 4, 5, 6, 7];
        let x: Vec<u16> = (0..11).map(|i| (i * 7 % 10) as u16).collect();
        let (mut c, mut p) = (Vec::new(), Vec::new());
        run(&key, 10, &tweak, &x, true, &mut c);
        assert_ne!(c, x);
        run(&key, 10, &tweak, &c, false, &mut p);
        assert_eq!(p, x);
    }
}
