//! A TCP proxy on loopback in front of PostgreSQL: the App's database URL points here, and a
//! test cuts every proxied connection at an instant (the database connection dropped
//! mid-batch), optionally refusing new ones for a while after, or freezes it (a database that
//! no longer answers: every byte held, every socket left open).

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
    /// Bytes are no longer forwarded: connections hang, new ones are accepted and held.
    frozen: AtomicBool,
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
                let shared = s.clone();
                let pipe = tokio::spawn(async move {
                    if shared.frozen.load(Ordering::SeqCst) {
                        let _held = client;
                        return std::future::pending().await;
                    }
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    pipe(client, server, &shared).await;
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

    /// From now on nothing is forwarded and nothing closed: the database stops answering.
    pub fn freeze(&self, frozen: bool) {
        self.shared.frozen.store(frozen, Ordering::SeqCst);
    }

    /// Cuts made so far.
    #[allow(dead_code)]
    pub fn cuts(&self) -> u64 {
        self.shared.cuts.load(Ordering::SeqCst)
    }
}

/// Copies both ways until either side closes; once frozen, holds what it read and both
/// sockets, forever (until cut or dropped).
async fn pipe(mut client: TcpStream, mut server: TcpStream, shared: &Shared) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut a, mut b) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    loop {
        let (n, to_server) = tokio::select! {
            r = client.read(&mut a) => (r, true),
            r = server.read(&mut b) => (r, false),
        };
        let n = match n {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if shared.frozen.load(Ordering::SeqCst) {
            return std::future::pending().await;
        }
        let sent = if to_server {
            server.write_all(&a[..n]).await
        } else {
            client.write_all(&b[..n]).await
        };
        if sent.is_err() {
            return;
        }
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
