//! The tokens of the JSON byte scanner (`json_scan.rs`), as src/json-bytes/scan.ts reads them:
//! whitespace, strings and their escapes, numbers and literals, validated in place; and what
//! matching a key needs — a string decoded as JSON.parse decodes it (UTF-16 units, a lone
//! surrogate escape kept), and paths.ts's case folding.
#![forbid(unsafe_code)]

/// The bytes are not one UTF-8 JSON text (no position: callers report it in their own terms).
#[derive(Debug, PartialEq, Eq)]
pub struct NotJson;

pub type Scan<T> = Result<T, NotJson>;

pub(crate) fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(p) {
        p += 1;
    }
    p
}

/// Validates the string whose opening quote is at p; the position after its closing quote.
pub(crate) fn scan_string(b: &[u8], mut p: usize) -> Scan<usize> {
    p += 1;
    loop {
        match b.get(p) {
            None => return Err(NotJson),
            Some(b'"') => return Ok(p + 1),
            Some(b'\\') => p = scan_escape(b, p + 1)?,
            Some(&c) if c < 0x20 => return Err(NotJson),
            Some(_) => p += 1,
        }
    }
}

/// Validates the escape whose letter is at p; the position after it.
pub(crate) fn scan_escape(b: &[u8], p: usize) -> Scan<usize> {
    match b.get(p) {
        Some(b'u') if (1..=4).all(|i| b.get(p + i).is_some_and(u8::is_ascii_hexdigit)) => Ok(p + 5),
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(p + 1),
        _ => Err(NotJson),
    }
}

pub(crate) fn scan_number(b: &[u8], mut p: usize) -> Scan<usize> {
    let digit = |p: usize| b.get(p).is_some_and(u8::is_ascii_digit);
    if b.get(p) == Some(&b'-') {
        p += 1;
    }
    if b.get(p) == Some(&b'0') {
        p += 1;
    } else if digit(p) {
        while digit(p) {
            p += 1;
        }
    } else {
        return Err(NotJson);
    }
    if b.get(p) == Some(&b'.') {
        p += 1;
        if !digit(p) {
            return Err(NotJson);
        }
        while digit(p) {
            p += 1;
        }
    }
    if let Some(b'e' | b'E') = b.get(p) {
        p += 1;
        if let Some(b'+' | b'-') = b.get(p) {
            p += 1;
        }
        if !digit(p) {
            return Err(NotJson);
        }
        while digit(p) {
            p += 1;
        }
    }
    Ok(p)
}

pub(crate) fn scan_literal(b: &[u8], p: usize, c: u8) -> Scan<usize> {
    let word: &[u8] = match c {
        b't' => b"true",
        b'f' => b"false",
        b'n' => b"null",
        _ => return Err(NotJson),
    };
    if b.get(p..p + word.len()) == Some(word) {
        Ok(p + word.len())
    } else {
        Err(NotJson)
    }
}

/// A validated string's contents (between its quotes) decoded as JSON.parse decodes them, as UTF-16 units (a lone surrogate escape stays one unit).
pub(crate) fn decode_string(raw: &[u8]) -> Vec<u16> {
    let mut out = Vec::with_capacity(raw.len());
    let mut p = 0;
    while p < raw.len() {
        if raw[p] != b'\\' {
            let run = raw[p..].iter().position(|&c| c == b'\\').map_or(raw.len(), |n| p + n);
            out.extend(utf16_of(&raw[p..run]));
            p = run;
            continue;
        }
        let unit = match raw[p + 1] {
            b'u' => {
                let hex = std::str::from_utf8(&raw[p + 2..p + 6]).unwrap_or("0");
                p += 4;
                u16::from_str_radix(hex, 16).unwrap_or(0)
            }
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => 0x0a,
            b'r' => 0x0d,
            b't' => 0x09,
            c => c as u16,
        };
        out.push(unit);
        p += 2;
    }
    out
}

pub(crate) fn utf16_of(raw: &[u8]) -> Vec<u16> {
    String::from_utf8_lossy(raw).encode_utf16().collect()
}

pub(crate) fn fold_if(units: Vec<u16>, fold: bool) -> Vec<u16> {
    if fold {
        fold_key(&units)
    } else {
        units
    }
}

/// paths.ts foldKey over UTF-16 units: ASCII lower-cased; otherwise each code point upper-cased
/// then lower-cased where that keeps it one code point (a lone surrogate stays as it is).
pub(crate) fn fold_key(units: &[u16]) -> Vec<u16> {
    if units.iter().all(|&u| u < 0x80) {
        return units.iter().map(|&u| (u as u8).to_ascii_lowercase() as u16).collect();
    }
    let mut out = Vec::with_capacity(units.len());
    for unit in char::decode_utf16(units.iter().copied()) {
        match unit {
            Err(lone) => out.push(lone.unpaired_surrogate()),
            Ok(c) => {
                let u = single(c.to_uppercase()).unwrap_or(c);
                let l = single(u.to_lowercase()).unwrap_or(u);
                let mut buf = [0u16; 2];
                out.extend_from_slice(l.encode_utf16(&mut buf));
            }
        }
    }
    out
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// Raw ASCII bytes equal to `folded` (already lower-case) ignoring ASCII case.
pub(crate) fn ascii_fold_equals(raw: &[u8], folded: &[u8]) -> bool {
    raw.len() == folded.len() && raw.iter().zip(folded).all(|(&c, &f)| c.to_ascii_lowercase() == f)
}
