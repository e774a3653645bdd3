//! A one-node Slurm cluster on loopback for the tests: slurmctld and slurmd
//! with a minimal configuration in a private temp dir, started once per test
//! binary and stopped when the test process ends (a watchdog shell waits for
//! it). Munge is started when it is not running.
//!
//! Where the daemons cannot start (no slurm-wlm or munge packages, not
//! root) a test skips with a loud message, unless `GALAPAGOS_REQUIRE_SLURM`
//! is set (CI sets it): then it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A running cluster: point `SLURM_CONF` at `conf` to use it.
pub struct Cluster {
    pub conf: PathBuf,
    /// The scheduler's records of finished jobs (jobcomp/filetxt).
    pub jobcomp: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// A Slurm client command against this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `program args...`'s stdout (panics when it fails).
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.command(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Jobs in the queue whose name starts with `prefix`: (id, name, state).
    pub fn jobs(&self, prefix: &str) -> Vec<(String, String, String)> {
        self.run("squeue", &["-h", "-o", "%i|%j|%T"])
            .lines()
            .filter_map(|l| {
                let mut parts = l.split('|').map(|s| s.trim().to_owned());
                Some((parts.next()?, parts.next()?, parts.next()?))
            })
            .filter(|(_, name, _)| name.starts_with(prefix))
            .collect()
    }

    /// The jobcomp records (one line per finished job).
    pub fn records(&self) -> String {
        std::fs::read_to_string(&self.jobcomp).unwrap_or_default()
    }
}

/// The shared cluster, or `None` (with a loud message) where it cannot start.
pub fn cluster() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(start) {
        Ok(c) => Some(c),
        Err(why) => {
            assert!(
                std::env::var_os("GALAPAGOS_REQUIRE_SLURM").is_none(),
                "GALAPAGOS_REQUIRE_SLURM is set but the test cluster cannot start: {why}"
            );
            eprintln!(
                "\n\n!!!!!!!!!! SKIPPED: the Slurm test cluster cannot start here: {why} !!!!!!!!!!\n\
                 !!!!!!!!!! (install slurm-wlm and munge and run as root; CI sets GALAPAGOS_REQUIRE_SLURM) !!!!!!!!!!\n"
            );
            None
        }
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/sbin"].map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

fn quiet(program: &Path, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn munge_works() -> bool {
    Command::new("sh")
        .args(["-c", "munge -n | unmunge"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Munge: a key (made when missing) and the daemon (started when not
/// answering).
fn start_munge() -> Result<(), String> {
    if munge_works() {
        return Ok(());
    }
    let munged = which("munged").ok_or("munged is not installed (package munge)")?;
    if !Path::new("/etc/munge/munge.key").exists() {
        let mungekey = which("mungekey").ok_or("mungekey is not installed (package munge)")?;
        if !quiet(&mungekey, &["-c"]) {
            return Err("mungekey -c failed".to_owned());
        }
        let _ = quiet(Path::new("chown"), &["munge:munge", "/etc/munge/munge.key"]);
    }
    let _ = std::fs::create_dir_all("/run/munge");
    let _ = quiet(Path::new("chown"), &["munge:munge", "/run/munge"]);
    let _ = quiet(&munged, &["--force"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if munge_works() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err("munged does not answer (munge -n | unmunge fails)".to_owned())
}

fn start() -> Result<Cluster, String> {
    if !galapagos::engine::consent::running_as_root() {
        return Err("the daemons run as root (slurmd must), and this is not root".to_owned());
    }
    let slurmctld = which("slurmctld").ok_or("slurmctld is not installed (package slurm-wlm)")?;
    let slurmd = which("slurmd").ok_or("slurmd is not installed (package slurm-wlm)")?;
    for client in ["sbatch", "srun", "squeue", "scancel", "sinfo", "scontrol"] {
        which(client).ok_or(format!("{client} is not installed (package slurm-wlm)"))?;
    }
    start_munge()?;
    let dir = tempfile::Builder::new()
        .prefix("galapagos-slurm-test-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let d = &dir.path().to_path_buf();
    for sub in ["state", "spool"] {
        std::fs::create_dir_all(d.join(sub)).map_err(|e| e.to_string())?;
    }
    let host = String::from_utf8_lossy(
        &Command::new("hostname")
            .arg("-s")
            .output()
            .map_err(|e| format!("hostname: {e}"))?
            .stdout,
    )
    .trim()
    .to_owned();
    // More CPUs than the machine has (config_overrides lets slurmd accept
    // them): the tests' allocations wait on sleeping evaluators, not on
    // CPU, and tests run side by side.
    let cpus = 16;
    let mem_mib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(1024, |kb| kb / 1024 / 2);
    let (ctld_port, d_port) = (free_port()?, free_port()?);
    let p = |name: &str| d.join(name).display().to_string();
    let conf = format!(
        "ClusterName=galapagostest\n\
         SlurmctldHost={host}(127.0.0.1)\n\
         SlurmctldPort={ctld_port}\n\
         SlurmdPort={d_port}\n\
         SlurmUser=root\n\
         AuthType=auth/munge\n\
         StateSaveLocation={}\n\
         SlurmdSpoolDir={}\n\
         SlurmctldPidFile={}\n\
         SlurmdPidFile={}\n\
         SlurmctldLogFile={}\n\
         SlurmdLogFile={}\n\
         ProctrackType=proctrack/linuxproc\n\
         TaskPlugin=task/none\n\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_Core\n\
         AccountingStorageType=accounting_storage/none\n\
         JobCompType=jobcomp/filetxt\n\
         JobCompLoc={}\n\
         MpiDefault=none\n\
         ReturnToService=2\n\
         SlurmdParameters=config_overrides\n\
         NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mib} State=UNKNOWN\n\
         PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
        p("state"),
        p("spool"),
        p("slurmctld.pid"),
        p("slurmd.pid"),
        p("slurmctld.log"),
        p("slurmd.log"),
        p("jobcomp.txt"),
    );
    let conf_path = d.join("slurm.conf");
    std::fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
    // Both daemons in the foreground under a shell that ends them once
    // this test process is gone.
    let script = format!(
        "{ctld} -D -c -f {conf} & c=$!; {slurmd} -D -f {conf} & s=$!; \
         while kill -0 {pid} 2>/dev/null && kill -0 $c 2>/dev/null; do sleep 1; done; \
         kill $c $s 2>/dev/null; sleep 2; kill -9 $c $s 2>/dev/null; rm -rf {dir}",
        ctld = slurmctld.display(),
        slurmd = slurmd.display(),
        conf = conf_path.display(),
        pid = std::process::id(),
        dir = d.display(),
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the daemons: {e}"))?;
    let cluster = Cluster {
        jobcomp: d.join("jobcomp.txt"),
        conf: conf_path,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let out = cluster
            .command("sinfo")
            .args(["-h", "-o", "%T"])
            .stderr(Stdio::null())
            .output();
        if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
            return Ok(cluster);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = std::fs::read_to_string(d.join("slurmctld.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(5).collect();
    Err(format!(
        "the node did not become idle within 30 s (slurmctld.log ends: {})",
        tail.join(" / ")
    ))
}

/// Whether `cond` holds within `secs` seconds (checked every 100 ms).
pub fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    cond()
}
