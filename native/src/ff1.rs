//! FF1 (NIST SP 800-38G §5.1) over numerals 0..radix-1, for one key, radix and tweak, the mode
//! veil's JavaScript engine writes too (`src/engine/crypto/ff1.ts`), over the vetted AES block.
//!
//! Per length it caches the CBC-MAC state over P and the constant blocks of Q, so a round costs
//! one AES block. While radix^v fits 96 bits (b <= 12, so d <= 16 and S is R's first d bytes) the
//! halves are u128s; longer inputs take the general path over `num-bigint`, as the spec writes it.
#![forbid(unsafe_code)]

use num_bigint::BigUint;
use num_traits::{ToPrimitive, Zero};

use crate::aes_key::AesKey;
use crate::ff1_lockstep as lockstep;

/// The most numerals one value may have (the ff1 transformer's limit too: longer values are refused before they get here).
pub const MAX_NUMERALS: usize = 4096;

/// FF1's constants for inputs of n numerals under one key, radix and tweak.
pub struct Layout {
    pub(crate) n: usize,
    pub(crate) u: usize,
    pub(crate) b: usize,
    pub(crate) d: usize,
    pub(crate) radix: u32,
    /// radix^u, radix^v (u128 path only: both <= 2^96)
    pub(crate) mu: u128,
    pub(crate) mv: u128,
    /// u128 path: the CBC-MAC state XOR the constant leading bytes of Q's last block
    pub(crate) last: [u8; 16],
    /// general path: CIPH_K(P) and Q's constant part (T || zero pad)
    after_p: [u8; 16],
    q_const: Vec<u8>,
    fits: bool,
}

impl Layout {
    /// The layout of n numerals; the caller has checked radix (2..=65536) and the domain rule.
    pub fn new(aes: &AesKey, radix: u32, tweak: &[u8], n: usize) -> Layout {
        let (u, v) = (n / 2, n - n / 2);
        let t = tweak.len();
        let b = bit_length_of_power_minus_one(radix, v).div_ceil(8);
        let d = 4 * b.div_ceil(4) + 4;
        let mut p = [1u8, 2, 1, 0, 0, 0, 10, (u % 256) as u8, 0, 0, 0, 0, 0, 0, 0, 0];
        p[3..6].copy_from_slice(&radix.to_be_bytes()[1..]);
        p[8..12].copy_from_slice(&(n as u32).to_be_bytes());
        p[12..16].copy_from_slice(&(t as u32).to_be_bytes());
        let mut after_p = p;
        aes.encrypt(&mut after_p);
        let pad = (16 - (t + b + 1) % 16) % 16;
        let mut q_const = tweak.to_vec();
        q_const.resize(t + pad, 0);
        let fits = b <= 12;
        let mut last = [0u8; 16];
        if fits {
            // Q = q_const || [i] || NUM(B) in b bytes; 1 + b <= 13, so [i] and NUM(B) sit in Q's last block
            let mut state = after_p;
            let whole = q_const.len() + 1 + b - 16;
            for block in q_const[..whole].chunks_exact(16) {
                xor_into(&mut state, block);
                aes.encrypt(&mut state);
            }
            last = state;
            xor_into(&mut last[..16 - 1 - b], &q_const[whole..]);
        }
        let pow = |m: usize| if fits { (radix as u128).pow(m as u32) } else { 0 };
        Layout {
            n,
            u,
            b,
            d,
            radix,
            mu: pow(u),
            mv: pow(v),
            last,
            after_p,
            q_const,
            fits,
        }
    }

    /// Encrypts (forward) or decrypts every x of `xs` (each n numerals below radix), appending the outputs to `out` in order.
    pub fn run(&self, aes: &AesKey, xs: &[&[u16]], forward: bool, out: &mut Vec<u16>) {
        if !self.fits {
            xs.iter().for_each(|x| self.run_big(aes, x, forward, out));
        } else if self.d <= 8 {
            lockstep::run::<u64>(self, aes, xs, forward, out);
        } else {
            lockstep::run::<u128>(self, aes, xs, forward, out);
        }
    }

    /// whether the rounds run on u64s or u128s (radix^v <= 2^96) rather than the general path
    #[cfg(test)]
    pub fn fits_u128(&self) -> bool {
        self.fits
    }

    fn run_big(&self, aes: &AesKey, x: &[u16], forward: bool, out: &mut Vec<u16>) {
        let radix = BigUint::from(self.radix);
        let (mu, mv) = (radix.pow(self.u as u32), radix.pow((self.n - self.u) as u32));
        let mut a = num_big(&x[..self.u], self.radix);
        let mut b = num_big(&x[self.u..], self.radix);
        for r in 0..10u8 {
            let i = if forward { r } else { 9 - r };
            let m = if i % 2 == 0 { &mu } else { &mv };
            if forward {
                let c = (&a + self.prf_big(aes, i, &b)) % m;
                (a, b) = (b, c);
            } else {
                let y = self.prf_big(aes, i, &a) % m;
                let c = (&b + m - y) % m;
                (b, a) = (a, c);
            }
        }
        str_big(a, self.radix, self.u, out);
        str_big(b, self.radix, self.n - self.u, out);
    }

    /// NUM(S) for round i, as the spec writes it: R = PRF(P || Q), S = R || CIPH(R ⊕ [1]) || … cut to d bytes.
    fn prf_big(&self, aes: &AesKey, i: u8, num: &BigUint) -> BigUint {
        let mut q = self.q_const.clone();
        q.push(i);
        let bytes = num.to_bytes_be();
        q.resize(q.len() + self.b - bytes.len(), 0);
        q.extend_from_slice(&bytes);
        let mut r = self.after_p;
        for block in q.chunks_exact(16) {
            xor_into(&mut r, block);
            aes.encrypt(&mut r);
        }
        let mut s = r.to_vec();
        for j in 1..self.d.div_ceil(16) as u128 {
            let mut block = r;
            xor_into(&mut block, &j.to_be_bytes());
            aes.encrypt(&mut block);
            s.extend_from_slice(&block);
        }
        BigUint::from_bytes_be(&s[..self.d])
    }
}

fn xor_into(to: &mut [u8], from: &[u8]) {
    to.iter_mut().zip(from).for_each(|(t, f)| *t ^= f);
}

/// The bit length of radix^v - 1, i.e. ceil(v · log2(radix)), exactly (counted on the integer, no floating point).
fn bit_length_of_power_minus_one(radix: u32, v: usize) -> usize {
    let p = BigUint::from(radix).pow(v as u32) - 1u32;
    p.bits() as usize
}

fn num_big(x: &[u16], radix: u32) -> BigUint {
    x.iter().fold(BigUint::zero(), |acc, &d| acc * radix + d as u32)
}

fn str_big(mut value: BigUint, radix: u32, m: usize, out: &mut Vec<u16>) {
    let at = out.len();
    out.resize(at + m, 0);
    for slot in out[at..].iter_mut().rev() {
        let digit = &value % radix;
        *slot = digit.to_u16().unwrap_or(0);
        value /= radix;
    }
}

#[cfg(test)]
mod tests {
    use super::Layout;
    use crate::aes_key::AesKey;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// NIST SP 800-38G FF1 sample 1 (AES-128, radix 10, empty tweak) and 3 (radix 36), both ways.
    #[test]
    fn nist_samples_1_and_3() {
        let key = AesKey::new(&hex("2b7e151628aed2a6abf7158809cf4f3c")).unwrap();
        let x: Vec<u16> = (0..10).collect();
        let l = Layout::new(&key, 10, &[], 10);
        let mut out = Vec::new();
        l.run(&key, &[&x], true, &mut out);
        assert_eq!(out, [2, 4, 3, 3, 4, 7, 7, 4, 8, 4]);
        let mut back = Vec::new();
        l.run(&key, &[&out], false, &mut back);
        assert_eq!(back, x);
        let tweak = hex("3737373770717273373737");
        let x: Vec<u16> = (0..19).collect();
        let l = Layout::new(&key, 36, &tweak, 19);
        let mut out = Vec::new();
        l.run(&key, &[&x], true, &mut out);
        let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let text: String = out.iter().map(|&d| alphabet[d as usize] as char).collect();
        assert_eq!(text, "a9tv40mll9kdu509eum");
    }
}
