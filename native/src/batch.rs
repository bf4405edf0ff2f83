//! A batch of values in one buffer: value i is `bytes[offsets[i]..offsets[i + 1]]` (bytes, or FF1's u16 numerals).
#![forbid(unsafe_code)]

pub struct Batch<'a, T = u8> {
    bytes: &'a [T],
    offsets: &'a [u32],
}

impl<'a, T> Batch<'a, T> {
    /// Checks the offsets once (they start at 0, never decrease and end at the buffer's length), so iterating cannot go out of bounds.
    pub fn new(bytes: &'a [T], offsets: &'a [u32]) -> Result<Self, String> {
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            return Err("offsets hold at least one entry (0 for an empty batch)".into());
        };
        if first != 0 || last as usize != bytes.len() {
            return Err(format!("offsets run from 0 to the buffer's length {}, not {first} to {last}", bytes.len()));
        }
        if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!("offsets decrease at index {}", i + 1));
        }
        Ok(Batch { bytes, offsets })
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [T]> + '_ {
        self.offsets.windows(2).map(|w| &self.bytes[w[0] as usize..w[1] as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::Batch;

    #[test]
    fn splits_and_refuses_bad_offsets() {
        let b = Batch::new(b"abcde", &[0, 2, 2, 5]).unwrap();
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![&b"ab"[..], &b""[..], &b"cde"[..]]);
        assert!(Batch::new(b"abc", &[]).is_err());
        assert!(Batch::new(b"abc", &[1, 3]).is_err());
        assert!(Batch::new(b"abc", &[0, 2]).is_err());
        assert!(Batch::new(b"abc", &[0, 2, 1, 3]).is_err());
        assert_eq!(Batch::new(b"", &[0]).unwrap().len(), 0);
        assert_eq!(
            Batch::new(&[1u16, 2, 3][..], &[0, 1, 3]).unwrap().iter().collect::<Vec<_>>(),
            vec![&[1u16][..], &[2, 3][..]]
        );
    }
}
