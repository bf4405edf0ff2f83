//! The JSON byte scanner of src/json-bytes/scan.ts, ported (issue 42): one pass over a record's
//! UTF-8 JSON that validates it as JSON.parse would (after the bytes are valid UTF-8) and reports
//! where mapped paths land, as events of four numbers (mapping, kind, start, end) in document
//! order, without building the document. The JavaScript scanner stays the oracle:
//! test/native/json-scan fuzzes this one against it (same events on valid JSON, a refusal where it
//! refuses). Not yet here: the unmapped visitor (the guard's detectors) and the splice.
#![forbid(unsafe_code)]

/// Event kinds, as scan.ts numbers them.
pub const EV_STRING: u32 = 0;
pub const EV_RAW: u32 = 1;
pub const EV_MISSING: u32 = 2;
pub const EV_SHAPE: u32 = 3;
pub const EV_NO_ARRAY: u32 = 4;
pub const EV_NOT_SCALAR: u32 = 5;

/// One object key some mapping looks up (scan.ts KeyGroup).
pub struct KeyGroup {
    /// the name as UTF-8, compared with a key's raw bytes when the key has no escapes (folded: lower-case ASCII)
    pub bytes: Vec<u8>,
    /// the name as JavaScript holds it (UTF-16), compared with a decoded key
    pub units: Vec<u16>,
    pub ms: Vec<u32>,
    pub value: usize,
}

/// What the mappings need one value to be (scan.ts Expectation), by index into `Program::nodes`.
#[derive(Default)]
pub struct Node {
    pub keys: Vec<KeyGroup>,
    /// keys are compared case-folded (one compile option per tree)
    pub folded: bool,
    pub object_ms: Vec<u32>,
    pub array_ms: Vec<u32>,
    pub elements: Option<usize>,
    pub leaf_ms: Vec<u32>,
    pub all_ms: Vec<u32>,
}

/// A compiled expectation tree; node 0 is the root. No nodes: the scan only validates.
pub struct Program {
    pub nodes: Vec<Node>,
}

/// The bytes are not one UTF-8 JSON text (no position: callers report it in their own terms).
#[derive(Debug, PartialEq, Eq)]
pub struct NotJson;

type Scan<T> = Result<T, NotJson>;

const VALUE: u8 = 0;
const AFTER_VALUE: u8 = 1;
const KEY: u8 = 2;

/// An open mapped container: its node, and which of its keys were found (objects).
struct Frame {
    node: usize,
    found: Vec<bool>,
}

struct Scanner<'a> {
    b: &'a [u8],
    program: &'a Program,
    out: &'a mut Vec<u32>,
    /// the opening byte of each open container, by depth (index 0 unused)
    kinds: Vec<u8>,
    frames: Vec<Frame>,
    mapped_depth: usize,
}

/// Validates `b` as one JSON text and appends the events of the program's mappings to `out`.
pub fn scan_json(b: &[u8], program: &Program, out: &mut Vec<u32>) -> Scan<()> {
    if std::str::from_utf8(b).is_err() {
        return Err(NotJson);
    }
    let root = if program.nodes.is_empty() { None } else { Some(0) };
    Scanner {
        b,
        program,
        out,
        kinds: vec![0],
        frames: Vec::new(),
        mapped_depth: 0,
    }
    .run(root)
}

impl Scanner<'_> {
    fn run(&mut self, root: Option<usize>) -> Scan<()> {
        let b = self.b;
        let len = b.len();
        let mut p = 0;
        let mut exp = root;
        let mut state = VALUE;
        loop {
            p = skip_ws(b, p);
            let c = b.get(p).copied();
            let depth = self.kinds.len() - 1;
            if state == VALUE {
                if c == Some(b'{') || c == Some(b'[') {
                    let c = c.unwrap_or_default();
                    self.open(c, exp, p);
                    p = skip_ws(b, p + 1);
                    if b.get(p) == Some(&(c + 2)) {
                        // `}` and `]` are their opener + 2
                        p += 1;
                        self.close(p);
                        state = AFTER_VALUE;
                    } else if c == b'{' {
                        state = KEY;
                    } else {
                        exp = self.frame().and_then(|f| self.program.nodes[f.node].elements);
                    }
                    continue;
                }
                let start = p;
                let mut kind = EV_RAW;
                match c {
                    Some(b'"') => {
                        p = scan_string(b, p)?;
                        kind = EV_STRING;
                    }
                    Some(b'-' | b'0'..=b'9') => p = scan_number(b, p)?,
                    Some(c) => {
                        p = scan_literal(b, p, c)?;
                        if c == b'n' {
                            kind = EV_MISSING;
                        }
                    }
                    None => return Err(NotJson),
                }
                if let Some(node) = exp {
                    self.located(node, kind, start, p);
                }
                state = AFTER_VALUE;
            } else if state == AFTER_VALUE {
                if depth == 0 {
                    return if p == len { Ok(()) } else { Err(NotJson) };
                }
                let in_object = self.kinds[depth] == b'{';
                if c == Some(b',') {
                    p += 1;
                    if in_object {
                        state = KEY;
                    } else {
                        exp = self.frame().and_then(|f| self.program.nodes[f.node].elements);
                        state = VALUE;
                    }
                } else if c == Some(if in_object { b'}' } else { b']' }) {
                    p += 1;
                    self.close(p);
                } else {
                    return Err(NotJson);
                }
            } else {
                if c != Some(b'"') {
                    return Err(NotJson);
                }
                let start = p;
                p = scan_string(b, p)?;
                exp = match self.mapped_depth == depth && depth > 0 {
                    true => self.match_key(start, p),
                    false => None,
                };
                p = skip_ws(b, p);
                if b.get(p) != Some(&b':') {
                    return Err(NotJson);
                }
                p += 1;
                state = VALUE;
            }
        }
    }

    fn frame(&self) -> Option<&Frame> {
        let depth = self.kinds.len() - 1;
        if depth > 0 && depth <= self.mapped_depth {
            self.frames.get(depth - 1)
        } else {
            None
        }
    }

    fn open(&mut self, c: u8, exp: Option<usize>, p: usize) {
        self.kinds.push(c);
        let Some(node) = exp else { return };
        let n = &self.program.nodes[node];
        let frame = if c == b'{' {
            self.events(&n.array_ms, EV_NO_ARRAY, p, p);
            self.events(&n.leaf_ms, EV_NOT_SCALAR, p, p);
            (!n.keys.is_empty()).then(|| Frame {
                node,
                found: vec![false; n.keys.len()],
            })
        } else {
            self.events(&n.object_ms, EV_SHAPE, p, p);
            self.events(&n.leaf_ms, EV_NOT_SCALAR, p, p);
            n.elements.map(|_| Frame { node, found: Vec::new() })
        };
        if let Some(frame) = frame {
            let depth = self.kinds.len() - 1;
            self.frames.truncate(depth - 1);
            self.frames.push(frame);
            self.mapped_depth = depth;
        }
    }

    fn close(&mut self, p: usize) {
        let depth = self.kinds.len() - 1;
        if depth == self.mapped_depth {
            let frame = &self.frames[depth - 1];
            let node = &self.program.nodes[frame.node];
            // a key the object lacks is one absent location (an array's frame found no keys and looks up none)
            for (k, group) in node.keys.iter().enumerate() {
                if !frame.found.get(k).copied().unwrap_or(true) {
                    for &m in &group.ms {
                        self.out.extend_from_slice(&[m, EV_MISSING, p as u32, p as u32]);
                    }
                }
            }
            self.mapped_depth -= 1;
        }
        self.kinds.pop();
    }

    fn located(&mut self, node: usize, kind: u32, start: usize, end: usize) {
        let n = &self.program.nodes[node];
        if kind == EV_MISSING {
            self.events(&n.all_ms, EV_MISSING, start, end);
            return;
        }
        self.events(&n.leaf_ms, kind, start, end);
        self.events(&n.object_ms, EV_SHAPE, start, end);
        self.events(&n.array_ms, EV_NO_ARRAY, start, end);
    }

    fn events(&mut self, ms: &[u32], kind: u32, start: usize, end: usize) {
        for &m in ms {
            self.out.extend_from_slice(&[m, kind, start as u32, end as u32]);
        }
    }

    /// What the value of the key spanning [start, end) (quotes included) must be, if a mapping looks it up.
    fn match_key(&mut self, start: usize, end: usize) -> Option<usize> {
        let depth = self.kinds.len() - 1;
        let frame = self.frames.get_mut(depth - 1)?;
        let node = &self.program.nodes[frame.node];
        let raw = &self.b[start + 1..end - 1];
        let escaped = raw.contains(&b'\\');
        let plain_ascii = !escaped && raw.is_ascii();
        let decoded: Vec<u16> = match (escaped, node.folded && !plain_ascii) {
            (true, fold) => fold_if(decode_string(raw), fold),
            (false, true) => fold_key(&utf16_of(raw)),
            (false, false) => Vec::new(),
        };
        for (k, group) in node.keys.iter().enumerate() {
            let same = match (node.folded, plain_ascii, escaped) {
                (true, true, _) => ascii_fold_equals(raw, &group.bytes),
                (true, false, _) | (false, _, true) => decoded == group.units,
                (false, _, false) => raw == group.bytes.as_slice(),
            };
            if same {
                // every occurrence of a duplicate key is a location: parsers disagree on which one wins
                frame.found[k] = true;
                return Some(group.value);
            }
        }
        None
    }
}

fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(p) {
        p += 1;
    }
    p
}

/// Validates the string whose opening quote is at p; the position after its closing quote.
fn scan_string(b: &[u8], mut p: usize) -> Scan<usize> {
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
fn scan_escape(b: &[u8], p: usize) -> Scan<usize> {
    match b.get(p) {
        Some(b'u') if (1..=4).all(|i| b.get(p + i).is_some_and(u8::is_ascii_hexdigit)) => Ok(p + 5),
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(p + 1),
        _ => Err(NotJson),
    }
}

fn scan_number(b: &[u8], mut p: usize) -> Scan<usize> {
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

fn scan_literal(b: &[u8], p: usize, c: u8) -> Scan<usize> {
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
fn decode_string(raw: &[u8]) -> Vec<u16> {
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

fn utf16_of(raw: &[u8]) -> Vec<u16> {
    String::from_utf8_lossy(raw).encode_utf16().collect()
}

fn fold_if(units: Vec<u16>, fold: bool) -> Vec<u16> {
    if fold {
        fold_key(&units)
    } else {
        units
    }
}

/// paths.ts foldKey over UTF-16 units: ASCII lower-cased; otherwise each code point upper-cased
/// then lower-cased where that keeps it one code point (a lone surrogate stays as it is).
pub fn fold_key(units: &[u16]) -> Vec<u16> {
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
fn ascii_fold_equals(raw: &[u8], folded: &[u8]) -> bool {
    raw.len() == folded.len() && raw.iter().zip(folded).all(|(&c, &f)| c.to_ascii_lowercase() == f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(ms: &[u32]) -> Node {
        Node {
            leaf_ms: ms.to_vec(),
            all_ms: ms.to_vec(),
            ..Node::default()
        }
    }

    #[test]
    fn reports_a_mapped_leaf_and_a_missing_one() {
        let name = |s: &str| (s.as_bytes().to_vec(), s.encode_utf16().collect::<Vec<u16>>());
        let (eb, eu) = name("email");
        let (nb, nu) = name("name");
        let root = Node {
            keys: vec![
                KeyGroup {
                    bytes: eb,
                    units: eu,
                    ms: vec![0],
                    value: 1,
                },
                KeyGroup {
                    bytes: nb,
                    units: nu,
                    ms: vec![1],
                    value: 2,
                },
            ],
            object_ms: vec![0, 1],
            all_ms: vec![0, 1],
            ..Node::default()
        };
        let program = Program {
            nodes: vec![root, leaf(&[0]), leaf(&[1])],
        };
        let mut out = Vec::new();
        scan_json(br#"{"e\u006dail": "a@b", "x": [1, {"name": 2}]}"#, &program, &mut out).unwrap();
        assert_eq!(out, vec![0, EV_STRING, 15, 20, 1, EV_MISSING, 44, 44]);
        assert_eq!(scan_json(b"{\"a\":01}", &program, &mut out), Err(NotJson));
        assert_eq!(scan_json(b"[1,]", &program, &mut out), Err(NotJson));
        assert_eq!(scan_json(b"\"\xff\"", &program, &mut out), Err(NotJson));
    }

    #[test]
    fn folds_as_paths_ts_does() {
        let fold = |s: &str| String::from_utf16(&fold_key(&s.encode_utf16().collect::<Vec<_>>())).unwrap();
        assert_eq!(fold("EMAIL"), "email");
        assert_eq!(fold("ſ"), "s");
        assert_eq!(fold("\u{212A}"), "k");
        assert_eq!(fold("ß"), "ß");
        assert_eq!(fold("İx"), "İx");
    }
}
