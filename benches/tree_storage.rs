//! Storage and materialisation of folder programs (repository tasks).
//!
//! A 200-file, 2 MB tree; 1,000 genomes, each the child of an earlier one
//! with one or two of its files changed; every genome recorded through the
//! run folder's standard recorder (`archive.sqlite` + `genomes.jsonl`, each
//! with a 2 KB prompt and a reply, as a real genome has). Printed: the run
//! folder's size (target: under 50 MB), the time to read every genome back
//! (resume, export-run, compare and the leaderboard read them so), and the
//! time to write one genome's tree into a fresh evaluation folder (target:
//! under 20 ms), in memory and as read back from the archive, written file
//! by file (`Tree::write_to`), then, in the same invocation, as hard links
//! to the run's read-only blob copies on the same file system
//! (`Tree::link_into`, for a folder nothing writes: a Slurm candidate's
//! staging folder).
//!
//! `cargo bench --bench tree_storage` (`N=5000` for more genomes).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use galapagos::engine::archive::{Archive, Checkpoint, open_run_folder};
use galapagos::engine::card::Card;
use galapagos::engine::events::{RunInfo, RunStatus, RunSummary};
use galapagos::engine::genome::{Genome, Prompt, Tree};
use galapagos::engine::registry::Registry;

const FILES: usize = 200;
const FILE_BYTES: usize = 10_000;

/// A deterministic pseudo-random sequence (no RNG crate needed here).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// One source file of about `FILE_BYTES`, code-like.
fn source(i: usize, rng: &mut Lcg) -> String {
    let mut text = format!("\"\"\"Module {i}.\"\"\"\n\nimport math\n\n");
    let mut n = 0;
    while text.len() < FILE_BYTES {
        let a = rng.next() % 1000;
        let b = rng.next() % 97;
        text.push_str(&format!(
            "def f_{i}_{n}(x, k={b}):\n    \"\"\"Step {n} of module {i}.\"\"\"\n    return math.sin(x * {a}.0 / {b}.5) + k * x\n\n"
        ));
        n += 1;
    }
    text
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        dir_size(&p)
                    } else {
                        e.metadata().map_or(0, |m| m.len())
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// CPU seconds this process has used (user + system), from /proc (10 ms
/// ticks: meaningful over many writes, not one).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name
    (ticks(11) + ticks(12)) / 100.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let mut rng = Lcg(42);
    let initial: BTreeMap<String, String> = (0..FILES)
        .map(|i| {
            (
                format!("pkg/sub{}/module_{i}.py", i % 10),
                source(i, &mut rng),
            )
        })
        .collect();
    let root = Tree::from_texts(initial);
    println!(
        "tree: {} files, {:.2} MB; {n} genomes, each changing 1 or 2 files of an earlier one",
        root.len(),
        root.bytes() as f64 / 1e6
    );
    let prompt = Prompt {
        system: "You improve programs.".repeat(20),
        user: "Improve the program.\n".repeat(100),
    };
    let mut trees: Vec<Tree> = vec![root];
    let mut genomes: Vec<Arc<Genome>> = Vec::with_capacity(n);
    for id in 0..n as u64 {
        let parent = if id == 0 {
            None
        } else {
            Some((rng.next() % id) as usize)
        };
        let tree = match parent {
            None => trees[0].clone(),
            Some(p) => {
                let mut texts = trees[p].texts();
                let changes = 1 + (rng.next() % 2) as usize;
                for _ in 0..changes {
                    let i = (rng.next() as usize) % FILES;
                    let path = format!("pkg/sub{}/module_{i}.py", i % 10);
                    if let Some(text) = texts.get_mut(&path) {
                        text.push_str(&format!("\nTUNED_{id} = {}\n", rng.next() % 1000));
                    }
                }
                trees[p].with_texts(texts)
            }
        };
        if id > 0 {
            trees.push(tree.clone());
        }
        let mut scores = BTreeMap::new();
        scores.insert("combined_score".to_owned(), (id % 97) as f64 / 97.0);
        genomes.push(Arc::new(Genome {
            id,
            parent_id: parent.map(|p| p as u64),
            iteration: id,
            valid: true,
            scores,
            diff: parent.map(|p| tree.diff_from(&trees[p])),
            content: tree,
            prompt: Some(prompt.clone()),
            response: Some("<<<<<<< SEARCH\nA = 1\n=======\nA = 2\n>>>>>>> REPLACE\n".repeat(3)),
            ..Genome::default()
        }));
    }

    let dir = tempfile::tempdir().expect("tree_storage benchmark");
    let run = dir.path().join("run");
    let card = Card::from_yaml(
        include_str!("../cards/best_of_n.yaml"),
        "best_of_n",
        &Registry::builtin(),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let summary = RunSummary::empty(RunStatus::Completed);
    let info = RunInfo {
        card_name: card.name.clone(),
        task_name: "tree_storage".to_owned(),
        max_iterations: n as u64,
        model: "tree_storage".to_owned(),
        offline: true,
        seed: 0,
        parallel: 1,
        run_dir: Some(run.clone()),
        unsandboxed: None,
        forked_from: None,
        clearance: None,
    };
    let mut recorder = open_run_folder(&run, false).expect("tree_storage benchmark");
    recorder
        .begin(&info, &card, Path::new("/tmp/task"))
        .expect("tree_storage benchmark");
    let t = Instant::now();
    for (i, g) in genomes.iter().enumerate() {
        let checkpoint = Checkpoint {
            iterations_done: i as u64,
            last_iteration: i as u64,
            next_id: i as u64 + 1,
            rng: galapagos::engine::rng::seeded(1),
            policy: serde_json::Value::Null,
            memory: serde_json::Value::Null,
            usage: Default::default(),
            valid: i as u64,
            invalid: 0,
            rejected: 0,
            wall_secs: 0.0,
            steering: Default::default(),
        };
        recorder
            .record_iteration(std::slice::from_ref(g), &checkpoint)
            .expect("tree_storage benchmark");
    }
    recorder.finish(&summary).expect("tree_storage benchmark");
    drop(recorder);
    let record_s = t.elapsed().as_secs_f64();
    let archive_bytes = std::fs::metadata(run.join("archive.sqlite")).map_or(0, |m| m.len());
    let jsonl_bytes = std::fs::metadata(run.join("genomes.jsonl")).map_or(0, |m| m.len());
    let folder_bytes = dir_size(&run);
    println!(
        "recorded in {record_s:.2} s; archive.sqlite {:.1} MB, genomes.jsonl {:.1} MB, run folder {:.1} MB (target < 50 MB; \
         the trees alone would be {:.0} MB stored whole)",
        archive_bytes as f64 / 1e6,
        jsonl_bytes as f64 / 1e6,
        folder_bytes as f64 / 1e6,
        (n * FILES * FILE_BYTES) as f64 / 1e6
    );

    let t = Instant::now();
    let back = Archive::open(&run)
        .expect("tree_storage benchmark")
        .genomes()
        .expect("tree_storage benchmark");
    let read_s = t.elapsed().as_secs_f64();
    assert_eq!(back.len(), n);
    for (a, b) in genomes.iter().zip(&back) {
        assert_eq!(
            a.content.id(),
            b.content.id(),
            "genome {} reads back as written",
            a.id
        );
    }
    println!("read back all {n} genomes (trees resolved, files shared) in {read_s:.2} s");

    // EVAL_DIR: where evaluation folders go (default: the temp dir; the
    // Python evaluator's are in a tmpfs of the candidate's own)
    let out = std::env::var_os("EVAL_DIR").map_or_else(
        || dir.path().join("eval"),
        |d| std::path::PathBuf::from(d).join("tree_storage_eval"),
    );
    let store = out.join("blobs");
    let times = |from: &[&Tree], link: bool| -> Vec<f64> {
        let mut ms: Vec<f64> = from
            .iter()
            .enumerate()
            .map(|(i, tree)| {
                let folder = out.join(format!("c{i}"));
                let t = Instant::now();
                if link {
                    tree.link_into(&folder, &store)
                } else {
                    tree.write_to(&folder)
                }
                .expect("tree_storage benchmark");
                let took = t.elapsed().as_secs_f64() * 1e3;
                std::fs::remove_dir_all(&folder).ok();
                took
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms
    };
    let sample: Vec<&Tree> = (0..50).map(|i| &trees[(i * 37) % trees.len()]).collect();
    let cpu_before = cpu_secs();
    let mem = times(&sample, false);
    let cpu_ms = (cpu_secs() - cpu_before) * 1e3 / sample.len() as f64;
    let read: Vec<&Tree> = (0..50)
        .map(|i| &back[(i * 37) % back.len()].content)
        .collect();
    let from_archive = times(&read, false);
    println!(
        "a genome's tree written into a fresh evaluation folder ({}): median {:.2} ms, p95 {:.2} ms, max {:.2} ms \
         wall, {cpu_ms:.1} ms CPU on average (target < 20 ms); as read back from the archive: median {:.2} ms, \
         max {:.2} ms",
        out.display(),
        percentile(&mem, 0.5),
        percentile(&mem, 0.95),
        percentile(&mem, 1.0),
        percentile(&from_archive, 0.5),
        percentile(&from_archive, 1.0)
    );
    let cpu_before = cpu_secs();
    let linked = times(&sample, true);
    let cpu_ms = (cpu_secs() - cpu_before) * 1e3 / sample.len() as f64;
    println!(
        "the same trees as hard links to the run's read-only blob copies in {} (each blob written once, \
         the first tree's in its time): median {:.2} ms, p95 {:.2} ms, max {:.2} ms wall, {cpu_ms:.1} ms CPU on \
         average",
        store.display(),
        percentile(&linked, 0.5),
        percentile(&linked, 0.95),
        percentile(&linked, 1.0)
    );
    std::fs::remove_dir_all(&store).ok();
}
