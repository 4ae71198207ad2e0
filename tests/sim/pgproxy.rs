//! A TCP proxy on loopback in front of PostgreSQL: the App's database URL points here, and a
//! seed cuts every proxied connection at a random instant (the database connection dropped
//! mid-batch), optionally refusing new ones for a while after.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct PgProxy {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    /// The pipe task of every connection (finished ones are pruned on accept).
    conns: Mutex<Vec<JoinHandle<()>>>,
    refusing: AtomicBool,
    cuts: AtomicU64,
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.task.abort();
        for c in self.shared.conns().iter() {
            c.abort();
        }
    }
}

impl Shared {
    fn conns(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl PgProxy {
    /// Forwards `127.0.0.1:0` to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> PgProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the PostgreSQL proxy");
        let addr = listener.local_addr().expect("local address").to_string();
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if s.refusing.load(Ordering::SeqCst) {
                    drop(client); // the client sees the connection close
                    continue;
                }
                let upstream = upstream.clone();
                let pipe = tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let mut client = client;
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                let mut conns = s.conns();
                conns.retain(|c| !c.is_finished());
                conns.push(pipe);
            }
        });
        PgProxy { addr, shared, task }
    }

    /// Drops every proxied connection now (both sockets close); with `refuse`, new
    /// connections are closed at once for that long. Returns how many were cut.
    pub async fn cut(&self, refuse: Option<Duration>) -> usize {
        if refuse.is_some() {
            self.shared.refusing.store(true, Ordering::SeqCst);
        }
        let conns: Vec<JoinHandle<()>> = std::mem::take(&mut *self.shared.conns());
        let n = conns.iter().filter(|c| !c.is_finished()).count();
        for c in conns {
            c.abort();
        }
        self.shared.cuts.fetch_add(1, Ordering::SeqCst);
        if let Some(d) = refuse {
            tokio::time::sleep(d).await;
            self.shared.refusing.store(false, Ordering::SeqCst);
        }
        n
    }

    /// Cuts made so far.
    #[allow(dead_code)]
    pub fn cuts(&self) -> u64 {
        self.shared.cuts.load(Ordering::SeqCst)
    }
}

/// `url` with its `host:port` replaced by `addr`; `(new url, old host:port)`.
pub fn via(url: &str, addr: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let (auth_host, path) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (auth, host) = match auth_host.rsplit_once('@') {
        Some((a, h)) => (format!("{a}@"), h),
        None => (String::new(), auth_host),
    };
    let upstream = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:5432")
    };
    (format!("{scheme}://{auth}{addr}{path}"), upstream)
}
