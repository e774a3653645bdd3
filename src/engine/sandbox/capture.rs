//! What a candidate writes to its stdout and stderr, kept within bounds.

use std::collections::{BTreeMap, VecDeque};

use crate::engine::platform::{self, Pipe};

/// Bytes of each captured stream kept in the artifacts by default.
pub(crate) const DEFAULT_CAPTURE_BYTES: usize = 20_000;

/// What a candidate wrote to one stream: its first and last `limit / 2`
/// bytes, and how many bytes it wrote in all. A chatty candidate costs
/// bounded memory; the middle is counted, not kept.
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Bytes kept at each end.
    half: usize,
    /// Every byte the stream carried.
    total: u64,
}

impl Default for Capture {
    fn default() -> Self {
        Self::new(DEFAULT_CAPTURE_BYTES)
    }
}

impl Capture {
    /// A capture keeping at most `limit` bytes (at least 2).
    pub(crate) fn new(limit: usize) -> Self {
        let half = (limit / 2).max(1);
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            half,
            total: 0,
        }
    }

    /// Read what is there after `readable` (tokio then waits for new data);
    /// false at end of file.
    pub(crate) fn pump(&mut self, stream: &Pipe) -> bool {
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
    pub(crate) fn drain(&mut self, stream: &Pipe) {
        let mut buf = [0u8; 65536];
        loop {
            match platform::read_now(stream, &mut buf) {
                Ok(0) => return,
                Ok(n) => self.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// A capture kept elsewhere (a Slurm node's runner keeps the same
    /// halves): the first and last bytes of a stream that carried `total`.
    pub(crate) fn from_parts(limit: usize, head: &[u8], tail: &[u8], total: u64) -> Self {
        let mut capture = Self::new(limit);
        capture.head = head[..head.len().min(capture.half)].to_vec();
        capture.tail = tail[tail.len().saturating_sub(capture.half)..]
            .iter()
            .copied()
            .collect();
        let kept = (capture.head.len() + capture.tail.len()) as u64;
        capture.total = total.max(kept);
        capture
    }

    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.half.saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.half..]);
        } else {
            let extra = (self.tail.len() + chunk.len()).saturating_sub(self.half);
            self.tail.drain(..extra);
            self.tail.extend(chunk);
        }
    }

    /// The kept text: everything when it fits, else the head, a line saying
    /// exactly how many bytes were left out, and the tail. Cuts fall on
    /// character boundaries (a character split by a cut counts as omitted).
    pub(crate) fn text(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend(self.tail.iter());
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = utf8_prefix(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = utf8_suffix(&tail);
        let omitted = self.total - (head.len() + tail.len()) as u64;
        format!(
            "{}\n... [{omitted} bytes omitted] ...\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }

    /// Add the captured text as the artifact `name` unless it is empty. An
    /// artifact the evaluator itself named so is kept: the capture then goes
    /// under `name (captured)` (or `name (captured 2)`, ...), never over it.
    pub(crate) fn attach(&self, artifacts: &mut BTreeMap<String, String>, name: &str) {
        if self.total == 0 {
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

/// `bytes` without a UTF-8 sequence cut short at its end.
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes,
        // Cut short at the end: drop the incomplete sequence. Invalid bytes
        // elsewhere stay (they show as replacement characters).
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        Err(_) => bytes,
    }
}

/// `bytes` without continuation bytes of a character cut at its start.
fn utf8_suffix(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = Capture::new(100);
        c.push(b"hello ");
        c.push("wörld".as_bytes());
        assert_eq!(c.text(), "hello wörld");
        assert_eq!(c.total, 12);
    }

    #[test]
    fn a_flood_keeps_head_and_tail_and_counts_exactly_what_was_left_out() {
        let mut c = Capture::new(20_000);
        c.push(b"first line\n");
        let block = vec![b'x'; 65_536];
        let mut total = 11u64;
        // 209 MB in pipe-sized chunks.
        while total < 209_000_000 {
            c.push(&block);
            total += block.len() as u64;
        }
        c.push(b"\nlast line\n");
        total += 11;
        let text = c.text();
        assert!(text.starts_with("first line\nxxx"), "{}", &text[..40]);
        assert!(text.ends_with("xxx\nlast line\n"));
        let marker = format!("\n... [{} bytes omitted] ...\n", total - 20_000);
        assert!(text.contains(&marker), "expected {marker:?}");
        assert_eq!(text.len(), 20_000 + marker.len());
    }

    #[test]
    fn cuts_never_split_a_character_and_the_split_bytes_count_as_omitted() {
        let mut c = Capture::new(10);
        // Five 2-byte characters, then more: the head cut falls mid-character.
        c.push("aéééééééééé".as_bytes());
        c.push("zzzzzzzzz".as_bytes());
        c.push("éééé".as_bytes());
        let text = c.text();
        let (head, rest) = text.split_once("\n... [").unwrap();
        let (count, tail) = rest.split_once(" bytes omitted] ...\n").unwrap();
        assert!(
            !head.contains('\u{FFFD}') && !tail.contains('\u{FFFD}'),
            "{text}"
        );
        let total = c.total;
        let kept = (head.len() + tail.len()) as u64;
        assert_eq!(count.parse::<u64>().unwrap(), total - kept, "{text}");
    }

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
