//! Taking a run's result home: a genome's program written into a folder
//! ([`apply`]), and the lineage of the best genome as a git history
//! ([`export_git`]). Both work for single-file and repository runs alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::engine::archive::{Archive, ArchiveError};
use crate::engine::foreign::{Limit, Refused, RelPath, Target, Why};
use crate::engine::genome::{Genome, GenomeId};
use crate::engine::tree::{SINGLE_FILE, Tree};

/// Why a genome could not be taken home.
#[derive(Debug, thiserror::Error)]
pub enum TakeoutError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("{run}: no genome #{id} (the run has {count})")]
    NoGenome {
        run: PathBuf,
        id: GenomeId,
        count: usize,
    },
    #[error("{run}: no valid genome to take")]
    NoBest { run: PathBuf },
    #[error(
        "{dir}: local changes in {} (they differ from {base} and from genome #{id}); \
         commit or move them, or pass --force to overwrite",
        .files.join(", ")
    )]
    LocalChanges {
        dir: PathBuf,
        id: GenomeId,
        files: Vec<String>,
        /// What the folder held before it was changed, as the message names it.
        base: String,
    },
    #[error(
        "{dir}: not empty; export-run --git writes a new repository into an empty or new folder"
    )]
    NotEmpty { dir: PathBuf },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("git {args}: {message}")]
    Git { args: String, message: String },
    /// A path of the program, or a file of the folder, refused (see
    /// [`crate::engine::foreign`]).
    #[error(transparent)]
    Refused(#[from] Refused),
}

/// `path` of a program to be written into `to`, checked (a run folder comes
/// from elsewhere: its paths are checked again as they are written).
fn rel(to: &Path, path: &str) -> Result<RelPath, TakeoutError> {
    RelPath::new(path).map_err(|e| Refused::new(to, Why::BadPath(e)).into())
}

/// Every path of `tree`, checked, before anything is written.
fn check_all(to: &Path, tree: &Tree) -> Result<(), TakeoutError> {
    for (path, _) in tree.files() {
        rel(to, path)?;
    }
    Ok(())
}

fn io(path: &Path, e: impl std::fmt::Display) -> TakeoutError {
    TakeoutError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// A run's genomes and where a single-file program goes.
struct Run {
    dir: PathBuf,
    genomes: Vec<Genome>,
    /// The file name of a single-file program (its task's).
    program_file: String,
}

impl Run {
    fn open(dir: &Path) -> Result<Self, TakeoutError> {
        let archive = Archive::open(dir)?;
        let meta = archive.meta()?;
        let genomes = archive.genomes()?;
        let program_file = crate::engine::task::Task::load(&meta.task_dir)
            .map(|t| t.program_file)
            .unwrap_or_else(|_| SINGLE_FILE.to_owned());
        Ok(Self {
            dir: dir.to_path_buf(),
            genomes,
            program_file,
        })
    }

    fn genome(&self, id: GenomeId) -> Result<&Genome, TakeoutError> {
        self.genomes
            .iter()
            .find(|g| g.id == id)
            .ok_or_else(|| TakeoutError::NoGenome {
                run: self.dir.clone(),
                id,
                count: self.genomes.len(),
            })
    }

    /// The fittest genome that selection would take (ties: the earliest).
    fn best(&self) -> Result<&Genome, TakeoutError> {
        let mut best: Option<&Genome> = None;
        for g in &self.genomes {
            if let Some(f) = g.selection_fitness()
                && best
                    .and_then(Genome::selection_fitness)
                    .is_none_or(|b| f > b)
            {
                best = Some(g);
            }
        }
        best.ok_or_else(|| TakeoutError::NoBest {
            run: self.dir.clone(),
        })
    }

    /// A program as files: a single file gets its task's name.
    fn files(&self, tree: &Tree) -> Tree {
        if tree.is_single() {
            Tree::single(&self.program_file, tree.single_text().unwrap_or_default())
        } else {
            tree.clone()
        }
    }

    /// `g` and its ancestors, the root first.
    fn lineage<'a>(&'a self, g: &'a Genome) -> Vec<&'a Genome> {
        let mut out = vec![g];
        let mut seen = BTreeSet::from([g.id]);
        let mut at = g;
        while let Some(p) = at
            .parent_id
            .and_then(|id| self.genomes.iter().find(|x| x.id == id))
        {
            if !seen.insert(p.id) {
                break;
            }
            out.push(p);
            at = p;
        }
        out.reverse();
        out
    }
}

/// What [`apply`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub genome: GenomeId,
    /// Files written (changed or added).
    pub written: Vec<String>,
    /// Files deleted (the genome deleted them).
    pub deleted: Vec<String>,
    /// Files already as the genome has them.
    pub unchanged: usize,
}

/// Genome `id` (default: the run's best) of the run in `run_dir` and the
/// run's initial program, each as files named as the run's task names them:
/// what [`apply`] writes and compares with (also what the run service hands
/// a remote `apply`).
pub fn program_files(
    run_dir: &Path,
    id: Option<GenomeId>,
) -> Result<(GenomeId, Tree, Tree), TakeoutError> {
    let run = Run::open(run_dir)?;
    let genome = match id {
        Some(id) => run.genome(id)?,
        None => run.best()?,
    };
    let initial = run.files(
        &run.genomes
            .first()
            .map(|g| g.content.clone())
            .unwrap_or_default(),
    );
    Ok((genome.id, run.files(&genome.content), initial))
}

/// What a folder held before anyone changed it: the files local changes
/// are told apart by.
struct Base {
    /// Each path's content (`None`: the file was not there).
    files: BTreeMap<String, Option<Vec<u8>>>,
    /// How the error names it ("the checkout's HEAD", "genome #4").
    name: String,
}

impl Base {
    fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).and_then(|b| b.as_deref())
    }
}

/// The checkout's HEAD version of each of `paths`, when `dir` is in a git
/// work tree whose HEAD tracks some of them (`None` otherwise): a folder
/// `export-run --git` wrote, checked out at any generation, or a project
/// the program lives in.
fn git_head(dir: &Path, paths: &BTreeSet<String>) -> Option<Base> {
    git(dir, &["rev-parse", "--verify", "--quiet", "HEAD"]).ok()?;
    // the HEAD commit's message names the genome a generation is
    let subject = git(dir, &["log", "-1", "--format=%s"]).unwrap_or_default();
    let name = match subject
        .split("genome #")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .filter(|id| !id.is_empty())
    {
        Some(id) => format!("the checkout's HEAD (genome #{id})"),
        None => "the checkout's HEAD".to_owned(),
    };
    let files = paths
        .iter()
        .map(|path| {
            let at_head = Command::new("git")
                .args(["show", &format!("HEAD:./{path}")])
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| o.stdout);
            (path.clone(), at_head)
        })
        .collect::<BTreeMap<_, _>>();
    // a folder the checkout does not track (a copy inside some other
    // project) is not what its HEAD holds
    if files.values().all(Option::is_none) {
        return None;
    }
    Some(Base { files, name })
}

/// Write genome `id` (default: the run's best) of the run in `run_dir` into
/// `to`. A new or empty folder gets the whole program. In a folder that
/// holds a copy of the program, the files in which the genome differs from
/// what the folder held are written (and the ones it deleted removed): what
/// it held is its git HEAD when it is a checkout (`export-run --git` at any
/// generation), else the run's genome it holds (the one most of its files
/// agree with; the initial program when none does). A file that differs
/// from both what the folder held and the genome is a local change, and
/// nothing is written unless `force`.
pub fn apply(
    run_dir: &Path,
    id: Option<GenomeId>,
    to: &Path,
    force: bool,
) -> Result<Applied, TakeoutError> {
    let run = Run::open(run_dir)?;
    let genome = match id {
        Some(id) => run.genome(id)?,
        None => run.best()?,
    };
    let initial = run.files(
        &run.genomes
            .first()
            .map(|g| g.content.clone())
            .unwrap_or_default(),
    );
    let held = run.genomes.iter().map(|g| (g.id, run.files(&g.content)));
    apply_files(
        genome.id,
        &run.files(&genome.content),
        &initial,
        held,
        to,
        force,
    )
}

/// [`apply`] of genome `genome`'s files `target`, given the run's initial
/// program's `initial` (from [`program_files`], here or on a server) and
/// the run's genomes a folder outside a git checkout may hold (`held`, read
/// one at a time: the one agreeing with the folder the most is what its
/// local changes are told apart from; none, or no agreement: `initial`).
pub fn apply_files(
    genome: GenomeId,
    target: &Tree,
    initial: &Tree,
    held: impl IntoIterator<Item = (GenomeId, Tree)>,
    to: &Path,
    force: bool,
) -> Result<Applied, TakeoutError> {
    check_all(to, target)?;
    check_all(to, initial)?;
    let dest = Target::create(to)?;
    let mut out = Applied {
        genome,
        ..Applied::default()
    };
    if dest.is_empty()? {
        for (path, blob) in target.files() {
            dest.write(&rel(to, path)?, blob.bytes())?;
        }
        out.written = target.files().map(|(p, _)| p.to_owned()).collect();
        return Ok(out);
    }
    let mut disk: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
    let mut on_disk = |path: &str| -> Result<Option<Vec<u8>>, TakeoutError> {
        if let Some(have) = disk.get(path) {
            return Ok(have.clone());
        }
        let have = dest.read(&rel(to, path)?, Limit::TARGET_FILE)?;
        disk.insert(path.to_owned(), have.clone());
        Ok(have)
    };
    let mut paths: BTreeSet<String> = target
        .files()
        .chain(initial.files())
        .map(|(p, _)| p.to_owned())
        .collect();
    let base = match git_head(to, &paths) {
        Some(head) => head,
        None => {
            // the run's genome the folder holds: most files in agreement
            // (the earliest of equals, so an untouched copy is the initial);
            // a genome with a path that cannot be written is none of them
            let mut best: Option<(usize, Tree, GenomeId)> = None;
            for (held_id, files) in held {
                if check_all(to, &files).is_err() {
                    continue;
                }
                let mut agree = 0;
                let mut all: BTreeSet<&str> = paths.iter().map(String::as_str).collect();
                all.extend(files.files().map(|(p, _)| p));
                for path in all {
                    if on_disk(path)?.as_deref() == files.get(path).map(|b| b.bytes()) {
                        agree += 1;
                    }
                }
                if best.as_ref().is_none_or(|(n, _, _)| agree > *n) {
                    best = Some((agree, files, held_id));
                }
            }
            let (files, name) = match best {
                Some((agree, files, id)) if agree > 0 => (files, format!("genome #{id}")),
                _ => (initial.clone(), "the run's initial program".to_owned()),
            };
            paths.extend(files.files().map(|(p, _)| p.to_owned()));
            Base {
                files: paths
                    .iter()
                    .map(|p| (p.clone(), files.get(p).map(|b| b.bytes().to_vec())))
                    .collect(),
                name,
            }
        }
    };
    let mut writes = Vec::new();
    let mut deletes = Vec::new();
    let mut conflicts = Vec::new();
    for path in &paths {
        let want = target.get(path).map(|b| b.bytes());
        let was = base.get(path);
        let have = on_disk(path)?;
        if have.as_deref() == want {
            out.unchanged += 1;
            continue;
        }
        if want == was {
            // the genome has what the folder held: a local edit stays as it is
            continue;
        }
        if have.as_deref() != was {
            conflicts.push(path.clone());
        }
        match want {
            Some(_) => writes.push(path.clone()),
            None => deletes.push(path.clone()),
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(TakeoutError::LocalChanges {
            dir: to.to_path_buf(),
            id: genome,
            files: conflicts,
            base: base.name,
        });
    }
    for path in &writes {
        let bytes = target.get(path).map(|b| b.bytes()).unwrap_or_default();
        dest.write(&rel(to, path)?, bytes)?;
    }
    for path in &deletes {
        dest.remove(&rel(to, path)?)?;
    }
    out.written = writes;
    out.deleted = deletes;
    Ok(out)
}

/// What [`export_git`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// The lineage, root first: one commit each.
    pub lineage: Vec<GenomeId>,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, TakeoutError> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "galapagos")
        .env("GIT_AUTHOR_EMAIL", "galapagos@localhost")
        .env("GIT_COMMITTER_NAME", "galapagos")
        .env("GIT_COMMITTER_EMAIL", "galapagos@localhost")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .map_err(|e| TakeoutError::Git {
            args: args.join(" "),
            message: format!("cannot run git: {e}"),
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(TakeoutError::Git {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// The commit message of one generation.
fn message(g: &Genome) -> String {
    let fitness = g
        .fitness()
        .map_or_else(|| "invalid".to_owned(), |f| format!("{f:.6}"));
    let mut text = format!(
        "generation {}: genome #{} (iteration {}), {} {fitness}\n\n",
        g.metadata.generation,
        g.id,
        g.iteration,
        g.fitness_key()
    );
    match g.parent_id {
        Some(p) => text.push_str(&format!("parent: #{p}\n")),
        None => text.push_str("the initial program\n"),
    }
    if !g.metadata.patch_type.is_empty() {
        text.push_str(&format!("edit: {}\n", g.metadata.patch_type));
    }
    if let Some(model) = &g.metadata.model {
        text.push_str(&format!("model: {model}\n"));
    }
    if !g.scores.is_empty() {
        text.push_str("scores:\n");
        for (k, v) in &g.scores {
            text.push_str(&format!("  {k}: {v}\n"));
        }
    }
    text
}

/// Write a git repository into `to` (new or empty) whose history is the
/// lineage of the run's best genome: one commit per generation, the initial
/// program first, each with its scores in the message.
pub fn export_git(run_dir: &Path, to: &Path) -> Result<Exported, TakeoutError> {
    let run = Run::open(run_dir)?;
    let best = run.best()?;
    let lineage = run.lineage(best);
    match std::fs::read_dir(to) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(TakeoutError::NotEmpty {
                    dir: to.to_path_buf(),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
        }
        Err(e) => return Err(io(to, e)),
    }
    for g in &lineage {
        check_all(to, &run.files(&g.content))?;
    }
    git(to, &["init", "--quiet", "--initial-branch=main"])?;
    let dest = Target::open(to)?;
    let mut previous: Option<Tree> = None;
    for g in &lineage {
        let tree = run.files(&g.content);
        if let Some(prev) = &previous {
            for (path, _) in prev.files() {
                if tree.get(path).is_none() {
                    dest.remove(&rel(to, path)?)?;
                }
            }
        }
        for (path, blob) in tree.files() {
            dest.write(&rel(to, path)?, blob.bytes())?;
        }
        git(to, &["add", "--all"])?;
        git(
            to,
            &[
                "commit",
                "--quiet",
                "--allow-empty",
                "--no-verify",
                "-m",
                &message(g),
            ],
        )?;
        previous = Some(tree);
    }
    Ok(Exported {
        lineage: lineage.iter().map(|g| g.id).collect(),
    })
}
