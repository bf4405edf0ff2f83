//! The JSON byte scanner of src/json-bytes/scan.ts, ported (issue 42): one pass over a record's
//! UTF-8 JSON that validates it as JSON.parse would (after the bytes are valid UTF-8) and reports
//! where mapped paths land, as events of four numbers (mapping, kind, start, end) in document
//! order, without building the document. The JavaScript scanner stays the oracle:
//! test/native/json-scan fuzzes this one against it (same events on valid JSON, a refusal where it
//! refuses). Not yet here: the unmapped visitor (the guard's detectors) and the splice.
#![forbid(unsafe_code)]

use crate::json_lex::{ascii_fold_equals, decode_string, fold_if, fold_key, scan_literal, scan_number, scan_string, skip_ws, utf16_of, NotJson, Scan};

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

/// What the scanner reads next.
#[derive(Clone, Copy)]
enum State {
    Value,
    AfterValue,
    Key,
    Done,
}

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
    /// the cursor
    p: usize,
    /// the node the value at the cursor is expected to match, if a mapping reaches it
    exp: Option<usize>,
}

/// Validates `b` as one JSON text and appends the events of the program's mappings to `out`.
pub fn scan_json(b: &[u8], program: &Program, out: &mut Vec<u32>) -> Scan<()> {
    if std::str::from_utf8(b).is_err() {
        return Err(NotJson);
    }
    Scanner {
        b,
        program,
        out,
        kinds: vec![0],
        frames: Vec::new(),
        mapped_depth: 0,
        p: 0,
        exp: if program.nodes.is_empty() { None } else { Some(0) },
    }
    .run()
}

impl Scanner<'_> {
    fn run(&mut self) -> Scan<()> {
        let mut state = State::Value;
        loop {
            self.p = skip_ws(self.b, self.p);
            state = match state {
                State::Value => self.value()?,
                State::AfterValue => self.after_value()?,
                State::Key => self.key()?,
                State::Done => return Ok(()),
            };
        }
    }

    /// A value starts at the cursor: a container opens (and closes at once when empty), or a scalar is read and located.
    fn value(&mut self) -> Scan<State> {
        let (b, start) = (self.b, self.p);
        let c = b.get(start).copied();
        if let Some(c @ (b'{' | b'[')) = c {
            self.open(c, self.exp, start);
            self.p = skip_ws(b, start + 1);
            // `}` and `]` are their opener + 2
            if b.get(self.p) == Some(&(c + 2)) {
                self.p += 1;
                self.close(self.p);
                return Ok(State::AfterValue);
            }
            if c == b'{' {
                return Ok(State::Key);
            }
            self.exp = self.elements();
            return Ok(State::Value);
        }
        let (end, kind) = match c {
            Some(b'"') => (scan_string(b, start)?, EV_STRING),
            Some(b'-' | b'0'..=b'9') => (scan_number(b, start)?, EV_RAW),
            Some(c) => (scan_literal(b, start, c)?, if c == b'n' { EV_MISSING } else { EV_RAW }),
            None => return Err(NotJson),
        };
        if let Some(node) = self.exp {
            self.located(node, kind, start, end);
        }
        self.p = end;
        Ok(State::AfterValue)
    }

    /// After a value: the end of the text, or a comma or the closing bracket of the open container.
    fn after_value(&mut self) -> Scan<State> {
        let depth = self.kinds.len() - 1;
        if depth == 0 {
            return if self.p == self.b.len() { Ok(State::Done) } else { Err(NotJson) };
        }
        let in_object = self.kinds[depth] == b'{';
        let c = self.b.get(self.p).copied();
        if c == Some(b',') {
            self.p += 1;
            if in_object {
                return Ok(State::Key);
            }
            self.exp = self.elements();
            return Ok(State::Value);
        }
        if c == Some(if in_object { b'}' } else { b']' }) {
            self.p += 1;
            self.close(self.p);
            return Ok(State::AfterValue);
        }
        Err(NotJson)
    }

    /// An object's key and its colon: the value after it is expected where a mapping names the key.
    fn key(&mut self) -> Scan<State> {
        let (b, start) = (self.b, self.p);
        if b.get(start) != Some(&b'"') {
            return Err(NotJson);
        }
        let end = scan_string(b, start)?;
        let depth = self.kinds.len() - 1;
        self.exp = if self.mapped_depth == depth && depth > 0 {
            self.match_key(start, end)
        } else {
            None
        };
        let p = skip_ws(b, end);
        if b.get(p) != Some(&b':') {
            return Err(NotJson);
        }
        self.p = p + 1;
        Ok(State::Value)
    }

    /// The node an element of the open array is expected to match.
    fn elements(&self) -> Option<usize> {
        self.frame().and_then(|f| self.program.nodes[f.node].elements)
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
