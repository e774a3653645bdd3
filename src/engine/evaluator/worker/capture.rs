//! What a candidate writes to its stdout and stderr, kept within bounds.

use std::collections::{BTreeMap, VecDeque};

use tokio::net::unix::pipe;

/// What a candidate wrote to one stream: the first and the last
/// 2 * `CAPTURE_LIMIT` bytes (a chatty candidate costs bounded memory; the
/// middle is counted, not kept).
#[derive(Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: usize,
}

/// Characters of each captured stream kept in the artifacts.
const CAPTURE_LIMIT: usize = 20_000;

impl Capture {
    /// Read what is there after `readable` (tokio then waits for new data);
    /// false at end of file.
    pub(crate) fn pump(&mut self, stream: &pipe::Receiver) -> bool {
        let mut buf = [0u8; 65536];
        loop {
            match stream.try_read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => self.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Read everything there is now, without waiting. Direct reads, not
    /// tokio's cached readiness: this must see bytes that arrived just
    /// before the result (the stream is not waited on afterwards).
    pub(crate) fn drain(&mut self, stream: &pipe::Receiver) {
        let mut buf = [0u8; 65536];
        loop {
            match rustix::io::read(stream, &mut buf) {
                Ok(0) => return,
                Ok(n) => self.push(&buf[..n]),
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
        }
    }

    fn push(&mut self, mut chunk: &[u8]) {
        let room = (2 * CAPTURE_LIMIT).saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        self.tail.extend(chunk);
        let extra = self.tail.len().saturating_sub(2 * CAPTURE_LIMIT);
        if extra > 0 {
            self.tail.drain(..extra);
            self.dropped += extra;
        }
    }

    /// What was captured, as text (clipped, the middle counted).
    pub(crate) fn text(&self) -> String {
        let mut data = self.head.clone();
        if self.dropped > 0 {
            data.extend_from_slice(
                format!("\n... [{} bytes omitted] ...\n", self.dropped).as_bytes(),
            );
        }
        data.extend(self.tail.iter());
        clip(&String::from_utf8_lossy(&data), CAPTURE_LIMIT)
    }

    /// Add the captured text as the artifact `name` unless it is empty. An
    /// artifact the evaluator itself named so is kept: the capture then goes
    /// under `name (captured)` (or `name (captured 2)`, ...), never over it.
    pub(crate) fn attach(&self, artifacts: &mut BTreeMap<String, String>, name: &str) {
        if self.head.is_empty() && self.dropped == 0 {
            return;
        }
        let mut key = name.to_owned();
        let mut n = 1;
        while artifacts.contains_key(&key) {
            key = if n == 1 {
                format!("{name} (captured)")
            } else {
                format!("{name} (captured {n})")
            };
            n += 1;
        }
        artifacts.insert(key, self.text());
    }
}

/// At most `limit` characters: the first and last halves around a marker.
fn clip(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_owned();
    }
    let half = limit / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!(
        "{head}\n... [{} characters omitted] ...\n{tail}",
        count - 2 * half
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_never_replaces_an_artifact_of_its_name() {
        let mut c = Capture::default();
        c.push(b"printed\n");
        let mut artifacts = BTreeMap::new();
        c.attach(&mut artifacts, "stdout");
        assert_eq!(artifacts["stdout"], "printed\n");
        let mut artifacts = BTreeMap::from([
            ("stdout".to_owned(), "the evaluator's".to_owned()),
            (
                "stdout (captured)".to_owned(),
                "also the evaluator's".to_owned(),
            ),
        ]);
        c.attach(&mut artifacts, "stdout");
        assert_eq!(artifacts["stdout"], "the evaluator's");
        assert_eq!(artifacts["stdout (captured)"], "also the evaluator's");
        assert_eq!(artifacts["stdout (captured 2)"], "printed\n");
        let mut none = BTreeMap::new();
        Capture::default().attach(&mut none, "stdout");
        assert!(none.is_empty());
    }
}
