//! FF1's rounds for many values of one length at once (the u128 layouts: radix^v <= 2^96): each
//! round's blocks go through AES together (`encrypt_blocks`, which AES-NI pipelines), where one
//! value alone waits out every block's latency. The halves are u64s when S fits 8 bytes (d = 8,
//! radix^v < 2^32 — card numbers, national ids, most digit fields) and u128s otherwise.
#![forbid(unsafe_code)]

use std::ops::{Add, Div, Mul, Rem, Sub};

use crate::aes_key::AesKey;
use crate::ff1::Layout;

/// The integer the halves and NUM(S) are held in.
pub trait Word: Copy + PartialOrd + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Rem<Output = Self> + Div<Output = Self> {
    /// a value known to fit (the radix, radix^u, radix^v, a numeral)
    fn of(v: u128) -> Self;
    /// NUM(S) for S the first d bytes of the block
    fn s_of(block: &[u8], d: usize) -> Self;
    fn be_bytes(self) -> [u8; 16];
    fn low(self) -> u16;
}

impl Word for u64 {
    fn of(v: u128) -> Self {
        v as u64
    }
    fn s_of(block: &[u8], d: usize) -> Self {
        u64::from_be_bytes(block[..8].try_into().unwrap_or([0; 8])) >> (8 * (8 - d))
    }
    fn be_bytes(self) -> [u8; 16] {
        (self as u128).to_be_bytes()
    }
    fn low(self) -> u16 {
        self as u16
    }
}

impl Word for u128 {
    fn of(v: u128) -> Self {
        v
    }
    fn s_of(block: &[u8], d: usize) -> Self {
        u128::from_be_bytes(block.try_into().unwrap_or([0; 16])) >> (8 * (16 - d))
    }
    fn be_bytes(self) -> [u8; 16] {
        self.to_be_bytes()
    }
    fn low(self) -> u16 {
        self as u16
    }
}

/// Encrypts (forward) or decrypts every x of `xs` (each n numerals below radix), appending the outputs to `out` in order.
pub fn run<W: Word>(l: &Layout, aes: &AesKey, xs: &[&[u16]], forward: bool, out: &mut Vec<u16>) {
    let radix = W::of(l.radix as u128);
    let (mu, mv) = (W::of(l.mu), W::of(l.mv));
    let mut a: Vec<W> = xs.iter().map(|x| num(&x[..l.u], radix)).collect();
    let mut b: Vec<W> = xs.iter().map(|x| num(&x[l.u..], radix)).collect();
    let mut blocks = vec![aes::Block::default(); xs.len()];
    for r in 0..10u8 {
        let i = if forward { r } else { 9 - r };
        let m = if i % 2 == 0 { mu } else { mv };
        let fed = if forward { &b } else { &a };
        for (block, &half) in blocks.iter_mut().zip(fed) {
            // Q's last block: its constant bytes, [i], NUM(B) in b bytes, CBC-chained (Layout::last)
            block.copy_from_slice(&l.last);
            block[15 - l.b] ^= i;
            let bytes = half.be_bytes();
            block[16 - l.b..].iter_mut().zip(&bytes[16 - l.b..]).for_each(|(t, f)| *t ^= f);
        }
        aes.encrypt_blocks(&mut blocks);
        // the halves and y are below m: (a + y) mod m is one conditional subtraction
        for (j, block) in blocks.iter().enumerate() {
            let y = W::s_of(block, l.d) % m;
            if forward {
                let c = below(a[j] + y, m);
                (a[j], b[j]) = (b[j], c);
            } else {
                let c = below(b[j] + m - y, m);
                (b[j], a[j]) = (a[j], c);
            }
        }
    }
    for (&aj, &bj) in a.iter().zip(&b) {
        numerals(aj, radix, l.u, out);
        numerals(bj, radix, l.n - l.u, out);
    }
}

fn below<W: Word>(x: W, m: W) -> W {
    if x >= m {
        x - m
    } else {
        x
    }
}

fn num<W: Word>(x: &[u16], radix: W) -> W {
    x.iter().fold(W::of(0), |acc, &d| acc * radix + W::of(d as u128))
}

/// STR^m_radix(value), appended
fn numerals<W: Word>(mut value: W, radix: W, m: usize, out: &mut Vec<u16>) {
    let at = out.len();
    out.resize(at + m, 0);
    for slot in out[at..].iter_mut().rev() {
        *slot = (value % radix).low();
        value = value / radix;
    }
}
