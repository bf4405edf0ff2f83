//! A seeded, reproducible stream for the differential tests (splitmix64): the same seed, the same cases.
#![forbid(unsafe_code)]

pub struct Random(pub u64);

impl Random {
    /// seeded from the environment variable `name` when it holds a number, else `fallback`
    pub fn seeded(name: &str, fallback: u64) -> Random {
        Random(std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(fallback))
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// how many cases a differential runs: the environment variable `name` when it holds a number, else `fallback`
pub fn cases(name: &str, fallback: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(fallback)
}
