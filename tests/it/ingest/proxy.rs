//! A TCP proxy on loopback that forwards to an upstream (anvil) and, while "slow", holds every
//! chunk sent upstream for a delay: a chain that answers too late to be read. The delay is
//! read per chunk, so pooled keep-alive connections slow down too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub(crate) struct DelayProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    delay_ms: Arc<AtomicU64>,
    held: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl DelayProxy {
    /// Forwards to `upstream` (`http://host:port`), without delay until `set_delay`.
    pub async fn start(upstream: &str) -> DelayProxy {
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let delay_ms = Arc::new(AtomicU64::new(0));
        let held = Arc::new(AtomicU64::new(0));
        let (d, h) = (delay_ms.clone(), held.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue; // the client sees the connection close
                };
                tokio::spawn(pipe(client, server, d.clone(), h.clone()));
            }
        });
        DelayProxy {
            url,
            delay_ms,
            held,
            task,
        }
    }

    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Chunks held back by a delay so far.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::SeqCst)
    }
}

async fn pipe(
    client: TcpStream,
    server: TcpStream,
    delay_ms: Arc<AtomicU64>,
    held: Arc<AtomicU64>,
) {
    let (mut c_read, mut c_write) = client.into_split();
    let (mut s_read, mut s_write) = server.into_split();
    let up = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match c_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let delay = delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                held.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            if s_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = s_write.shutdown().await;
    };
    let down = async move {
        let _ = tokio::io::copy(&mut s_read, &mut c_write).await;
        let _ = c_write.shutdown().await;
    };
    tokio::join!(up, down);
}
