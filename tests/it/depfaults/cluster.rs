//! A private PostgreSQL cluster for one test (initdb + pg_ctl on a free loopback port), so
//! that it can be restarted and stopped without touching the shared cluster on :5432.
//! Stopped (`-m immediate`) on drop.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::{free_port, skip};

pub(crate) struct PrivatePg {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    pub url: String,
    as_root: bool,
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["stop", "-m", "immediate", "-w"]);
    }
}

/// The newest `/usr/lib/postgresql/<v>/bin` that holds `initdb` and `pg_ctl`.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn check(what: &str, out: std::io::Result<Output>) -> Result<(), String> {
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "{what}: {}\n{}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("{what}: {e}")),
    }
}

impl PrivatePg {
    /// initdb (trust auth, superuser `postgres`) and start; None (skipped, or a failure under
    /// `PAYRECON_TEST_STRICT=1`) without the PostgreSQL server binaries.
    pub fn start() -> Option<PrivatePg> {
        let Some(bin) = bin_dir() else {
            skip("no initdb/pg_ctl under /usr/lib/postgresql/*/bin (private PostgreSQL cluster)");
            return None;
        };
        let as_root = is_root();
        if as_root
            && Command::new("id")
                .arg("postgres")
                .output()
                .map(|o| !o.status.success())
                .unwrap_or(true)
        {
            skip("running as root without a `postgres` OS user to run initdb as");
            return None;
        }
        let dir = payrecon_testkit::tmp::dir().expect("temp dir");
        if as_root {
            check(
                "chown the cluster dir",
                Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(dir.path())
                    .output(),
            )
            .unwrap();
        }
        let port = free_port();
        let pg = PrivatePg {
            bin,
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            port,
            dir,
            as_root,
        };
        let data = pg.data();
        pg.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )
        .unwrap();
        pg.start_server().unwrap();
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The server log (for failure messages).
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args).current_dir(self.dir.path());
        check(&format!("{tool} {args:?}"), cmd.output())
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let data = self.data();
        let mut all = vec!["-D", data.to_str().unwrap_or_default()];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all)
    }

    fn options(&self) -> String {
        format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off",
            self.port,
            self.dir.path().display()
        )
    }

    /// `pg_ctl start` (waits until the server accepts connections).
    pub fn start_server(&self) -> Result<(), String> {
        let log = self.log();
        let opts = self.options();
        self.pg_ctl(&[
            "-l",
            log.to_str().unwrap(),
            "-o",
            &opts,
            "-w",
            "-t",
            "60",
            "start",
        ])
    }

    /// `pg_ctl stop -m fast` (waits until it is down).
    pub fn stop_fast(&self) -> Result<(), String> {
        self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60"])
    }

    /// `pg_ctl restart -m fast`; returns how long it took.
    pub fn restart_fast(&self) -> Result<Duration, String> {
        let t0 = Instant::now();
        let log = self.log();
        let opts = self.options();
        self.pg_ctl(&[
            "-l",
            log.to_str().unwrap(),
            "-o",
            &opts,
            "-m",
            "fast",
            "-w",
            "-t",
            "60",
            "restart",
        ])?;
        Ok(t0.elapsed())
    }
}
