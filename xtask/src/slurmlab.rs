//! A one-node Slurm cluster on localhost (munged, slurmctld, slurmd from
//! Debian's packages), started in a directory of its own with its own munge
//! key and socket and unusual ports, so it neither needs nor disturbs a
//! system Slurm. The Slurm engine's test runs real job arrays on it;
//! dropping the cluster stops its daemons.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running localhost cluster.
pub struct LocalCluster {
    pub dir: PathBuf,
    /// The `slurm.conf` clients must be pointed at (`SLURM_CONF`).
    pub conf: PathBuf,
}

fn sbin(tool: &str) -> PathBuf {
    let p = Path::new("/usr/sbin").join(tool);
    if p.is_file() { p } else { PathBuf::from(tool) }
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().with_context(|| format!("starting {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl LocalCluster {
    /// Starts the daemons in `dir` (created) and waits until the node is
    /// idle. Needs root (slurmd runs jobs as their users).
    pub fn start(dir: &Path) -> Result<LocalCluster> {
        crate::prereq::ensure_slurm()?;
        std::fs::create_dir_all(dir.join("state"))?;
        std::fs::create_dir_all(dir.join("spool"))?;
        let dir = std::path::absolute(dir)?;
        let key = dir.join("munge.key");
        let mut bytes = vec![0u8; 128];
        {
            use std::io::Read as _;
            std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        }
        std::fs::write(&key, &bytes)?;
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
        }
        let sock = dir.join("munge.sock");
        run(
            Command::new(sbin("munged"))
                .arg("--force")
                .arg(format!("--socket={}", sock.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--log-file={}", dir.join("munged.log").display()))
                .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
                .arg(format!("--seed-file={}", dir.join("munged.seed").display())),
            "munged",
        )?;
        let host = String::from_utf8(Command::new("hostname").arg("-s").output()?.stdout)?
            .trim()
            .to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Ports from the process id, so two test runs do not collide.
        let port = 20_000 + (std::process::id() % 20_000) as u16 * 2;
        let d = dir.display();
        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=schedlab-test\nSlurmctldHost={host}\nSlurmctldPort={port}\nSlurmdPort={}\n\
                 AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={sock}\n\
                 SlurmUser=root\nSlurmdUser=root\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
                 SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
                 JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
                 SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nMpiDefault=none\n\
                 ReturnToService=2\nSchedulerType=sched/backfill\n\
                 NodeName={host} CPUs={cpus} State=UNKNOWN\n\
                 PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
                port + 1,
                sock = sock.display(),
            ),
        )?;
        let cluster = LocalCluster {
            dir: dir.clone(),
            conf: conf.clone(),
        };
        run(
            Command::new(sbin("slurmctld"))
                .arg("-f")
                .arg(&conf)
                .env("SLURM_CONF", &conf),
            "slurmctld",
        )?;
        run(
            Command::new(sbin("slurmd"))
                .arg("-f")
                .arg(&conf)
                .env("SLURM_CONF", &conf),
            "slurmd",
        )?;
        let t0 = Instant::now();
        loop {
            let out = Command::new("sinfo")
                .args(["--noheader", "--format=%t"])
                .env("SLURM_CONF", &conf)
                .output()?;
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if state == "idle" {
                return Ok(cluster);
            }
            if t0.elapsed() > Duration::from_secs(60) {
                bail!(
                    "the localhost Slurm node did not become idle in 60 s (sinfo: '{state}'; logs in {})",
                    dir.display()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for pid_file in ["slurmd.pid", "slurmctld.pid", "munged.pid"] {
            if let Some(pid) = std::fs::read_to_string(self.dir.join(pid_file))
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
    }
}
