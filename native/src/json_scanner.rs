//! The JSON scanner (`json_scan.rs`) as JavaScript calls it: a compiled expectation tree, built
//! once per mapping list (src/native/json-scan.ts encodes src/json-bytes' Expectation), and
//! chunks of records scanned in one call.

use napi::bindgen_prelude::Uint32Array;
use napi::Result;
use napi_derive::napi;

use crate::batch::Batch;
use crate::invalid;
use crate::json_scan::{scan_json, KeyGroup, Node, Program};

/// The events of a chunk: record i's are `events[4 × ends[i - 1]..4 × ends[i]]` (ends[-1] = 0),
/// spans relative to the record; `failed` lists the records that are not one UTF-8 JSON text.
#[napi(object)]
pub struct ScannedChunk {
    pub events: Uint32Array,
    pub ends: Uint32Array,
    pub failed: Vec<u32>,
}

#[napi]
pub struct JsonScanner {
    program: Program,
}

#[napi]
impl JsonScanner {
    /// `nodes`: the tree as words (json-scan.ts writes them); `names` and `units`: the key names as UTF-8 and as UTF-16.
    #[napi(constructor)]
    pub fn new(nodes: &[u32], names: &[u8], units: &[u16]) -> Result<Self> {
        let program = Words { words: nodes, at: 0 }
            .program(names, units)
            .ok_or_else(|| invalid("a malformed expectation tree".to_string()))?;
        Ok(JsonScanner { program })
    }

    /// Scans record i, `records[offsets[i]..offsets[i + 1]]`, for each record of the chunk.
    #[napi]
    pub fn scan_many(&self, records: &[u8], offsets: &[u32]) -> Result<ScannedChunk> {
        let batch = Batch::new(records, offsets).map_err(invalid)?;
        let mut events = Vec::new();
        let mut ends = Vec::with_capacity(batch.len());
        let mut failed = Vec::new();
        for (i, record) in batch.iter().enumerate() {
            let before = events.len();
            if scan_json(record, &self.program, &mut events).is_err() {
                events.truncate(before);
                failed.push(i as u32);
            }
            ends.push((events.len() / 4) as u32);
        }
        Ok(ScannedChunk {
            events: events.into(),
            ends: ends.into(),
            failed,
        })
    }
}

/// Reads the tree's words: node count, then per node `folded, elements + 1 (0: none), key count,
/// per key (names offset, length, units offset, length, value node, ms), object ms, array ms,
/// leaf ms, all ms`, each ms list as its length then its entries. None for anything out of bounds.
struct Words<'a> {
    words: &'a [u32],
    at: usize,
}

impl Words<'_> {
    fn next(&mut self) -> Option<u32> {
        let w = *self.words.get(self.at)?;
        self.at += 1;
        Some(w)
    }

    fn list(&mut self) -> Option<Vec<u32>> {
        let n = self.next()? as usize;
        let list = self.words.get(self.at..self.at + n)?.to_vec();
        self.at += n;
        Some(list)
    }

    fn program(mut self, names: &[u8], units: &[u16]) -> Option<Program> {
        let count = self.next()? as usize;
        let mut nodes = Vec::with_capacity(count.min(self.words.len()));
        for _ in 0..count {
            let folded = self.next()? == 1;
            let elements = (self.next()? as usize).checked_sub(1);
            let mut keys = Vec::new();
            for _ in 0..self.next()? {
                let (b, bl, u, ul) = (self.next()? as usize, self.next()? as usize, self.next()? as usize, self.next()? as usize);
                let value = self.next()? as usize;
                keys.push(KeyGroup {
                    bytes: names.get(b..b + bl)?.to_vec(),
                    units: units.get(u..u + ul)?.to_vec(),
                    value,
                    ms: self.list()?,
                });
            }
            nodes.push(Node {
                keys,
                folded,
                elements,
                object_ms: self.list()?,
                array_ms: self.list()?,
                leaf_ms: self.list()?,
                all_ms: self.list()?,
            });
        }
        let inside = |i: usize| i < nodes.len();
        let sound = nodes.iter().all(|n| n.elements.is_none_or(inside) && n.keys.iter().all(|k| inside(k.value)));
        (sound && self.at == self.words.len()).then_some(Program { nodes })
    }
}
