//! `galapagos hub`: make a hub folder, publish cards into it, build its
//! static site and preview it on loopback.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::engine::card::Card;
use crate::engine::hub::folder::{HubFolder, PublishOptions};
use crate::engine::hub::serve::SiteServer;
use crate::engine::hub::site::build_site;
use crate::engine::registry::Registry;

/// `galapagos hub ...`.
#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// Make DIR a hub folder (a git repository when git is installed).
    Init {
        /// The folder (new, empty, or already a hub).
        dir: PathBuf,
    },
    /// Publish a card (file, built-in name, bundle folder or .tar.gz) as a new version.
    Publish {
        /// The card or bundle.
        card: PathBuf,
        /// The hub folder.
        #[arg(long, value_name = "DIR")]
        hub: PathBuf,
        /// Publish under this namespace instead of the card's own.
        #[arg(long, value_name = "NS")]
        namespace: Option<String>,
        /// The version to publish as (default 1 for a new name; required when the name has versions).
        #[arg(long, value_name = "VERSION")]
        version: Option<String>,
        /// A leaderboard the card is on (its folder or leaderboard.json): its Results go with the card.
        #[arg(long, value_name = "DIR")]
        results: Option<PathBuf>,
    },
    /// Build the hub's static site (HTML, CSS, a small script, index.json, the raw cards).
    Build {
        /// The hub folder.
        dir: PathBuf,
        /// Where to write the site (new, empty, or an earlier build).
        #[arg(long, value_name = "SITE")]
        out: PathBuf,
    },
    /// Build the site and preview it on http://127.0.0.1:PORT/ until interrupted.
    Serve {
        /// The hub folder.
        dir: PathBuf,
        /// Where to build the site (default: a temporary folder, removed at exit).
        #[arg(long, value_name = "SITE")]
        out: Option<PathBuf>,
        /// The port (0: any free one).
        #[arg(long, default_value_t = 8080)]
        port: u16,
    },
}

/// Run a `galapagos hub` command; returns the exit code.
pub fn hub(command: &HubCommand) -> i32 {
    match command {
        HubCommand::Init { dir } => init(dir),
        HubCommand::Publish {
            card,
            hub,
            namespace,
            version,
            results,
        } => publish(
            card,
            hub,
            PublishOptions {
                namespace: namespace.clone(),
                version: version.clone(),
                results: results.clone(),
                known_secrets: Vec::new(),
            },
        ),
        HubCommand::Build { dir, out } => build(dir, out),
        HubCommand::Serve { dir, out, port } => serve(dir, out.as_deref(), *port),
    }
}

fn init(dir: &Path) -> i32 {
    match HubFolder::init(dir) {
        Ok(hub) => {
            let git = if hub.is_git() {
                " (a git repository)"
            } else {
                " (git is not installed: a plain folder)"
            };
            println!("hub folder {}{git}", dir.display());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// The card to publish: a file, bundle folder or archive when the path
/// exists, else a built-in card of that name.
fn load_publishable(path: &Path, registry: &Registry) -> Result<Card, String> {
    if path.exists() {
        return crate::engine::hub::import_bundle(path, registry).map_err(|e| e.to_string());
    }
    match crate::engine::builtin::card_for_arg(path) {
        Some(b) => Card::from_yaml(b.yaml, &format!("built-in:{}", b.name), registry)
            .map_err(|e| e.to_string()),
        None => Err(format!(
            "{}: no such file, bundle or built-in card",
            path.display()
        )),
    }
}

fn publish(card: &Path, hub: &Path, opts: PublishOptions) -> i32 {
    let registry = Registry::builtin();
    let hub = match HubFolder::open(hub) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let card = match load_publishable(card, &registry) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    match hub.publish(&card, &registry, &opts) {
        Ok(done) => {
            let commit = done.commit.as_deref().map_or_else(String::new, |c| {
                format!(", commit {}", &c[..c.len().min(12)])
            });
            println!(
                "published {}/{} version {} to {}{commit}",
                done.namespace,
                done.name,
                done.version,
                done.dir.display()
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn build(dir: &Path, out: &Path) -> i32 {
    let registry = Registry::builtin();
    let result = HubFolder::open(dir).and_then(|hub| build_site(&hub, &registry, out));
    match result {
        Ok(site) => {
            println!(
                "built {}: {} cards, {} pages, {} leaderboards",
                site.out.display(),
                site.cards,
                site.pages,
                site.leaderboards
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn serve(dir: &Path, out: Option<&Path>, port: u16) -> i32 {
    let registry = Registry::builtin();
    let temp = match out {
        Some(_) => None,
        None => match tempfile::Builder::new()
            .prefix("galapagos-hub-site-")
            .tempdir()
        {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("error: cannot make a temporary folder for the site: {e}");
                return 1;
            }
        },
    };
    let site_dir = out.map_or_else(
        || {
            temp.as_ref()
                .map(|t| t.path().join("site"))
                .unwrap_or_default()
        },
        Path::to_path_buf,
    );
    let built = HubFolder::open(dir).and_then(|hub| build_site(&hub, &registry, &site_dir));
    if let Err(e) = built {
        eprintln!("error: {e}");
        return 2;
    }
    let server = match SiteServer::bind(&site_dir, port) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "error: cannot listen on 127.0.0.1:{port}: {e} (another port: --port N, or --port 0 for any free one)"
            );
            return 1;
        }
    };
    match server.addr() {
        Ok(addr) => println!(
            "serving {} at http://{addr}/ (the site is in {}; Ctrl+C stops)",
            dir.display(),
            site_dir.display()
        ),
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    }
    std::io::stdout().flush().ok();
    std::thread::Builder::new()
        .name("hub-serve".to_owned())
        .spawn(move || server.serve())
        .ok();
    // Serve until Ctrl+C or SIGTERM, then remove the temporary site.
    let stopped = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(|rt| {
            rt.block_on(async {
                let mut term =
                    crate::engine::platform::on_terminate();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    Some(()) = async { match term.as_mut() { Some(t) => t.recv().await, None => std::future::pending().await } } => {}
                }
            });
        });
    drop(temp);
    match stopped {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// Pull a card from the hubs (`--hub` first, then the settings file's),
/// saying where it came from.
pub(super) fn pull_card(
    r: &crate::engine::hub::pull::HubRef,
    registry: &Registry,
    hubs: &super::HubArgs,
) -> Result<crate::engine::hub::pull::Pulled, i32> {
    let list = crate::engine::hub::pull::configured_hubs(&hubs.hubs).map_err(|e| {
        eprintln!("error: {e}");
        2
    })?;
    match crate::engine::hub::pull::pull(r, &list, registry) {
        Ok(p) => {
            println!(
                "card:        {}/{}@{} from {} (cached in {})",
                p.provenance.namespace,
                p.provenance.name,
                p.provenance.version,
                p.provenance.hub,
                p.cached.display()
            );
            Ok(p)
        }
        Err(e) => {
            for line in e.lines() {
                eprintln!("error: {line}");
            }
            Err(2)
        }
    }
}
