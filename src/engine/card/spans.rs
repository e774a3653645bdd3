//! Where each key of a YAML document is, and where its value starts: dotted
//! path → (line, column) of both, so a card error can point at the key or at
//! the value, whatever stage found it (see the rule in [`super`]).

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// 1-based line and column.
pub type Pos = (usize, usize);

/// Path → position of the key (for mapping entries) or item (for
/// sequences), and of the value.
#[derive(Debug, Default)]
pub struct Spans {
    keys: HashMap<String, Pos>,
    values: HashMap<String, Pos>,
}

enum Frame {
    Map {
        path: String,
        expecting_key: bool,
        key: Option<String>,
    },
    Seq {
        path: String,
        index: usize,
    },
}

struct Collector {
    stack: Vec<Frame>,
    keys: HashMap<String, Pos>,
    values: HashMap<String, Pos>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn pos(mark: Marker) -> Pos {
    (mark.line(), mark.col() + 1)
}

impl Collector {
    /// Path of the value that is about to start (its position recorded),
    /// and mark the frame as consumed.
    fn value_path(&mut self, mark: Marker) -> Option<String> {
        let path = match self.stack.last_mut() {
            Some(Frame::Map {
                path,
                expecting_key,
                key,
            }) => {
                if *expecting_key {
                    None
                } else {
                    *expecting_key = true;
                    key.take().map(|k| join(path, &k))
                }
            }
            Some(Frame::Seq { path, index }) => {
                let p = format!("{path}[{index}]");
                *index += 1;
                self.keys.entry(p.clone()).or_insert(pos(mark));
                Some(p)
            }
            None => Some(String::new()),
        };
        if let Some(p) = &path {
            self.values.entry(p.clone()).or_insert(pos(mark));
        }
        path
    }
}

impl MarkedEventReceiver for Collector {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(value, ..) => {
                if let Some(Frame::Map {
                    path,
                    expecting_key,
                    key,
                }) = self.stack.last_mut()
                    && *expecting_key
                {
                    let full = join(path, &value);
                    self.keys.entry(full).or_insert(pos(mark));
                    *key = Some(value);
                    *expecting_key = false;
                    return;
                }
                let _ = self.value_path(mark);
            }
            Event::MappingStart(..) => {
                let path = self.value_path(mark).unwrap_or_default();
                self.stack.push(Frame::Map {
                    path,
                    expecting_key: true,
                    key: None,
                });
            }
            Event::SequenceStart(..) => {
                let path = self.value_path(mark).unwrap_or_default();
                self.stack.push(Frame::Seq { path, index: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            Event::Alias(_) => {
                let _ = self.value_path(mark);
            }
            _ => {}
        }
    }
}

impl Spans {
    /// Collect positions; a document that does not parse yields the spans
    /// read before the error.
    pub fn of(text: &str) -> Self {
        let mut collector = Collector {
            stack: Vec::new(),
            keys: HashMap::new(),
            values: HashMap::new(),
        };
        let mut parser = Parser::new_from_str(text);
        if parser.load(&mut collector, false).is_err() {
            // partial spans are still useful
        }
        Self {
            keys: collector.keys,
            values: collector.values,
        }
    }

    /// Position of `path`'s key, or of its deepest known ancestor's.
    pub fn find(&self, path: &str) -> Option<Pos> {
        Self::nearest(&self.keys, path)
    }

    /// Position of `path`'s key (`None` when the document has no such key).
    pub fn key(&self, path: &str) -> Option<Pos> {
        self.keys.get(path).copied()
    }

    /// Position of `path`'s value, else of its key, else of its deepest
    /// known ancestor's key.
    pub fn value(&self, path: &str) -> Option<Pos> {
        self.values
            .get(path)
            .copied()
            .or_else(|| Self::nearest(&self.keys, path))
    }

    fn nearest(map: &HashMap<String, Pos>, path: &str) -> Option<Pos> {
        let mut p = path.to_owned();
        loop {
            if let Some(pos) = map.get(&p) {
                return Some(*pos);
            }
            let cut = p.rfind(['.', '['])?;
            p.truncate(cut);
            if p.is_empty() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_keys_items_and_values() {
        let text = "name: x\nselection_policy:\n  kind: best_of_n\n  best_of_n: -3\nllm:\n  models:\n    - name: a\n      weight: 2\nproposer: {kind: diff, x: 3}\n";
        let s = Spans::of(text);
        assert_eq!(s.find("name"), Some((1, 1)));
        assert_eq!(s.value("name"), Some((1, 7)));
        assert_eq!(s.find("selection_policy.best_of_n"), Some((4, 3)));
        assert_eq!(s.value("selection_policy.best_of_n"), Some((4, 14)));
        assert_eq!(s.find("llm.models[0].weight"), Some((8, 7)));
        assert_eq!(s.value("llm.models[0].weight"), Some((8, 15)));
        assert_eq!(s.find("selection_policy.nope"), Some((2, 1)));
        assert_eq!(s.key("selection_policy.nope"), None);
        assert_eq!(s.key("proposer.x"), Some((9, 24)));
        assert_eq!(s.value("proposer.x"), Some((9, 27)));
        assert_eq!(s.value("proposer.kind"), Some((9, 18)));
    }
}
