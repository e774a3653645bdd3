//! Folder programs in the archive: every file's contents stored once, by
//! hash, and each genome's program as a reference to a manifest of paths
//! to those blobs.
//!
//! - `blobs(id, size, data)`: a file's bytes (deflated), named by their
//!   SHA-256; a file that ten thousand genomes share is stored once.
//! - `trees(id, manifest)`: a folder program's `path\0blob\n` lines in path
//!   order (deflated), named by the tree's hash.
//!
//! A genome whose program is a folder is recorded with
//! `"content": {"tree": "<id>"}` (in `archive.sqlite` and `genomes.jsonl`
//! alike); a single-file program keeps its text inline, as records have
//! always held it. [`TreeReader`] turns a record back into a genome.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read as _, Write as _};

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::engine::genome::Genome;
use crate::engine::tree::{Blob, Digest, Tree};

/// What a record of a folder program holds in place of its files.
const REFERENCE_KEY: &str = "tree";

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS trees (id TEXT PRIMARY KEY, manifest BLOB NOT NULL);
";

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    // writing into a Vec cannot fail
    e.write_all(bytes).ok();
    e.finish().unwrap_or_default()
}

fn inflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

/// A genome as the archive records it: its JSON, with a folder program
/// replaced by a reference to its tree (returned to be stored beside it).
pub(crate) fn encode(g: &Genome) -> Result<(String, Option<&Tree>), serde_json::Error> {
    if g.content.is_single() {
        return Ok((serde_json::to_string(g)?, None));
    }
    let shell = Genome {
        content: Tree::default(),
        ..g.clone()
    };
    let mut value = serde_json::to_value(&shell)?;
    if let Some(map) = value.as_object_mut() {
        let mut reference = serde_json::Map::new();
        reference.insert(
            REFERENCE_KEY.to_owned(),
            serde_json::Value::String(g.content.id().to_string()),
        );
        map.insert("content".to_owned(), serde_json::Value::Object(reference));
    }
    Ok((serde_json::to_string(&value)?, Some(&g.content)))
}

/// Store `tree`'s manifest and every blob not stored yet. `known` holds
/// what this writer has stored (or found stored) so far.
pub(crate) fn store_tree(
    conn: &Connection,
    tree: &Tree,
    known: &mut HashSet<Digest>,
) -> rusqlite::Result<()> {
    if known.contains(tree.id()) {
        return Ok(());
    }
    let exists = |table: &str, id: &Digest| -> rusqlite::Result<bool> {
        conn.prepare_cached(&format!("SELECT 1 FROM {table} WHERE id = ?1"))?
            .query_row([id.as_str()], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
    };
    let mut manifest = String::with_capacity(tree.len() * 96);
    for (path, blob) in tree.files() {
        manifest.push_str(path);
        manifest.push('\0');
        manifest.push_str(blob.id().as_str());
        manifest.push('\n');
        if known.contains(blob.id()) {
            continue;
        }
        if !exists("blobs", blob.id())? {
            conn.prepare_cached("INSERT OR IGNORE INTO blobs(id, size, data) VALUES (?1, ?2, ?3)")?
                .execute(params![
                    blob.id().as_str(),
                    blob.len() as i64,
                    deflate(blob.bytes())
                ])?;
        }
        known.insert(blob.id().clone());
    }
    if !exists("trees", tree.id())? {
        conn.prepare_cached("INSERT OR IGNORE INTO trees(id, manifest) VALUES (?1, ?2)")?
            .execute(params![tree.id().as_str(), deflate(manifest.as_bytes())])?;
    }
    known.insert(tree.id().clone());
    Ok(())
}

/// The tree id of a record that references one (cheap check first: the
/// reference is written as `"content":{"tree":`).
fn reference(json: &str) -> Option<()> {
    json.contains("\"content\":{\"tree\":").then_some(())
}

/// Reads genome records back, resolving folder programs from the blobs and
/// trees of an archive; blobs and trees read once are shared by every genome
/// that has them (a long run's programs cost what their distinct files do).
pub(crate) struct TreeReader<'c> {
    conn: Option<&'c Connection>,
    blobs: HashMap<Digest, Blob>,
    trees: HashMap<Digest, Tree>,
}

impl<'c> TreeReader<'c> {
    /// `conn`: the archive holding the blobs (`None`: records must hold
    /// single-file programs only).
    pub(crate) fn new(conn: Option<&'c Connection>) -> Self {
        Self {
            conn,
            blobs: HashMap::new(),
            trees: HashMap::new(),
        }
    }

    /// One record back into a genome.
    pub(crate) fn decode(&mut self, json: &str) -> Result<Genome, String> {
        if reference(json).is_none() {
            return serde_json::from_str(json).map_err(|e| e.to_string());
        }
        let mut value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let id = value
            .get("content")
            .and_then(|c| c.get(REFERENCE_KEY))
            .and_then(|t| t.as_str())
            .and_then(Digest::parse)
            .ok_or_else(|| "content: a tree reference without a valid id".to_owned())?;
        if let Some(map) = value.as_object_mut() {
            map.insert(
                "content".to_owned(),
                serde_json::Value::String(String::new()),
            );
        }
        let mut genome: Genome = serde_json::from_value(value).map_err(|e| e.to_string())?;
        genome.content = self.tree(&id)?;
        Ok(genome)
    }

    fn tree(&mut self, id: &Digest) -> Result<Tree, String> {
        if let Some(t) = self.trees.get(id) {
            return Ok(t.clone());
        }
        let conn = self.conn.ok_or_else(|| {
            format!(
                "program tree {}: its files are in the run's archive.sqlite, which is not here",
                id.short()
            )
        })?;
        let manifest: Option<Vec<u8>> = conn
            .prepare_cached("SELECT manifest FROM trees WHERE id = ?1")
            .and_then(|mut s| s.query_row([id.as_str()], |r| r.get(0)).optional())
            .map_err(|e| format!("program tree {}: {e}", id.short()))?;
        let manifest =
            manifest.ok_or_else(|| format!("program tree {} is not in the archive", id.short()))?;
        let manifest =
            inflate(&manifest).map_err(|e| format!("program tree {}: {e}", id.short()))?;
        let manifest =
            String::from_utf8(manifest).map_err(|e| format!("program tree {}: {e}", id.short()))?;
        let mut files = BTreeMap::new();
        for line in manifest.lines() {
            let (path, blob) = line
                .split_once('\0')
                .ok_or_else(|| format!("program tree {}: a malformed manifest line", id.short()))?;
            // A run folder comes from elsewhere: its paths are checked as
            // they enter the record (no `..`, no absolute path, no `.git`).
            crate::engine::tree::check_path(path)
                .map_err(|e| format!("program tree {}: refused: {e}", id.short()))?;
            let blob = Digest::parse(blob).ok_or_else(|| {
                format!("program tree {}: {path}: a malformed blob id", id.short())
            })?;
            files.insert(path.to_owned(), self.blob(conn, &blob, path)?);
        }
        let tree = Tree::folder(files);
        if tree.id() != id {
            return Err(format!(
                "program tree {}: its files hash to {}, not to its id",
                id.short(),
                tree.id().short()
            ));
        }
        self.trees.insert(id.clone(), tree.clone());
        Ok(tree)
    }

    fn blob(&mut self, conn: &Connection, id: &Digest, path: &str) -> Result<Blob, String> {
        if let Some(b) = self.blobs.get(id) {
            return Ok(b.clone());
        }
        let data: Option<Vec<u8>> = conn
            .prepare_cached("SELECT data FROM blobs WHERE id = ?1")
            .and_then(|mut s| s.query_row([id.as_str()], |r| r.get(0)).optional())
            .map_err(|e| format!("{path}: {e}"))?;
        let data = data.ok_or_else(|| {
            format!(
                "{path}: its contents ({}) are not in the archive",
                id.short()
            )
        })?;
        let blob = Blob::from_bytes(inflate(&data).map_err(|e| format!("{path}: {e}"))?);
        if blob.id() != id {
            return Err(format!(
                "{path}: its stored contents do not hash to {}",
                id.short()
            ));
        }
        self.blobs.insert(id.clone(), blob.clone());
        Ok(blob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(n: usize, changed: usize) -> Tree {
        Tree::from_texts(
            (0..n)
                .map(|i| {
                    let text = if i == changed {
                        format!("changed {i}\n")
                    } else {
                        format!("file {i}\n")
                    };
                    (format!("src/f{i}.py"), text)
                })
                .collect(),
        )
    }

    #[test]
    fn folder_programs_are_stored_once_and_read_back_shared() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let mut known = HashSet::new();
        let mut records = Vec::new();
        for id in 0..3u64 {
            let g = Genome {
                id,
                content: folder(10, id as usize),
                ..Genome::default()
            };
            let (json, tree) = encode(&g).unwrap();
            assert!(json.contains("\"content\":{\"tree\":"), "{json}");
            assert!(!json.contains("changed"), "files are not inline: {json}");
            store_tree(&conn, tree.unwrap(), &mut known).unwrap();
            records.push((g, json));
        }
        let blobs: i64 = conn
            .query_row("SELECT COUNT(*) FROM blobs", [], |r| r.get(0))
            .unwrap();
        // 10 files, each changed once: 10 originals... minus the 3 replaced
        // in turn, plus 3 changed versions; file 0..2 originals appear in
        // the other genomes
        assert_eq!(blobs, 13);
        let mut reader = TreeReader::new(Some(&conn));
        let back: Vec<Genome> = records
            .iter()
            .map(|(_, j)| reader.decode(j).unwrap())
            .collect();
        for ((g, _), b) in records.iter().zip(&back) {
            assert_eq!(&b.content, &g.content);
            assert_eq!(b.id, g.id);
        }
        assert_eq!(back[1].content.text_of("src/f1.py"), Some("changed 1\n"));
        // an unchanged file is one allocation for every genome that has it
        let a = back[0].content.get("src/f9.py").unwrap();
        let b = back[2].content.get("src/f9.py").unwrap();
        assert!(std::ptr::eq(a.bytes().as_ptr(), b.bytes().as_ptr()));
        // single-file programs stay inline
        let single = Genome {
            content: Tree::single("p.py", "x = 1\n"),
            ..Genome::default()
        };
        let (json, tree) = encode(&single).unwrap();
        assert!(
            tree.is_none() && json.contains("\"content\":\"x = 1\\n\""),
            "{json}"
        );
        let err = TreeReader::new(None).decode(&records[0].1).unwrap_err();
        assert!(err.contains("archive.sqlite"), "{err}");
    }
}
