//! A fake Chaingateway API v2 on loopback for the demo: the notification lists with Laravel
//! pagination, the failed list and resend, a bearer token and the `X-Network` check. It serves
//! a fixed world: what was added is what is listed. Tests and benchmarks wrap its routes
//! (`FakeChaingateway::start_wrapped`): faults, latency, counters, list changes and block
//! numbers are added by the `payrecon-testkit` dev crate, never here.
//!
//! Records are kept serialized, in a `Vec` per chain (pages are slices; ids are indexed), so
//! 100,000+ records serve in O(page) time and about their JSON size in memory.

mod lists;
mod server;

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};

pub use lists::ChainLists;

/// Chain path names the fake answers for without any setup.
const KNOWN_CHAINS: &[&str] = &["ethereum", "bsc", "polygon", "tron", "bitcoin"];

/// The running server. Dropping it stops the server; it derefs to its `Gateway`.
pub struct FakeChaingateway {
    gateway: Arc<Gateway>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeChaingateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Deref for FakeChaingateway {
    type Target = Gateway;
    fn deref(&self) -> &Gateway {
        &self.gateway
    }
}

/// The fake's world, shared by its handle and its handlers: the lists, what was resent and
/// how the API answers (network, page size, order).
pub struct Gateway {
    api_key: String,
    /// `http://127.0.0.1:PORT/api/v2`.
    base_url: String,
    state: Mutex<State>,
}

struct State {
    network: String,
    per_page: usize,
    chains: HashMap<String, ChainLists>,
    retries: Vec<(String, String)>,
    /// The notifications list is served last record first (newest first).
    newest_first: bool,
}

impl FakeChaingateway {
    /// Starts the server on `127.0.0.1:0`; returns its handle and base URL
    /// (`http://127.0.0.1:PORT/api/v2`). Expects network `mainnet` and 15 records a page.
    pub async fn start(api_key: &str) -> (FakeChaingateway, String) {
        FakeChaingateway::start_wrapped(api_key, |routes, _| routes).await
    }

    /// As `start`, serving what `wrap` makes of the fake's routes (a middleware layer around
    /// them, say); `wrap` is given the world the routes serve.
    pub async fn start_wrapped(
        api_key: &str,
        wrap: impl FnOnce(axum::Router, Arc<Gateway>) -> axum::Router,
    ) -> (FakeChaingateway, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the fake Chaingateway");
        let addr = listener.local_addr().expect("local address");
        let base_url = format!("http://{addr}/api/v2");
        let gateway = Arc::new(Gateway {
            api_key: api_key.to_string(),
            base_url: base_url.clone(),
            state: Mutex::new(State {
                network: "mainnet".into(),
                per_page: 15,
                chains: HashMap::new(),
                retries: Vec::new(),
                newest_first: false,
            }),
        });
        let app = wrap(server::router(gateway.clone()), gateway.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (FakeChaingateway { gateway, task }, base_url)
    }
}

impl Gateway {
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Adds a record (any JSON, well-formed or not) at the end of the chain's list; a record
    /// whose `id` already exists replaces it in place.
    pub fn add_notification(&self, chain: &str, record: Value) {
        self.with_lists(chain, |lists| lists.push(record));
    }

    /// Puts a known notification on the failed list (once). Returns false for an unknown id.
    pub fn mark_failed(&self, chain: &str, id: &str) -> bool {
        let mut state = self.state();
        state.chains.get_mut(chain).is_some_and(|d| d.mark(id))
    }

    /// Runs `f` on the chain's lists (made empty first if the chain has none).
    pub fn with_lists<R>(&self, chain: &str, f: impl FnOnce(&mut ChainLists) -> R) -> R {
        f(self.state().chains.entry(chain.to_string()).or_default())
    }

    /// The `X-Network` value the fake accepts (a missing header means `mainnet`).
    pub fn set_network(&self, network: &str) {
        self.state().network = network.to_string();
    }

    /// Serves the notifications list last record first: a record added with
    /// `add_notification` appears at the head of page 1, and every other moves down (the
    /// failed list keeps its order).
    pub fn set_newest_first(&self, newest_first: bool) {
        self.state().newest_first = newest_first;
    }

    /// Records a page.
    pub fn per_page(&self) -> usize {
        self.state().per_page
    }

    pub fn set_per_page(&self, per_page: usize) {
        self.state().per_page = per_page.max(1);
    }

    /// `(chain, id)` of every resend answered 200, in order.
    pub fn retries(&self) -> Vec<(String, String)> {
        self.state().retries.clone()
    }

    /// The answer to a request without the bearer token or with another `X-Network`; `None`
    /// for a request the API admits.
    pub fn refusal(&self, headers: &HeaderMap) -> Option<Response> {
        server::refusal(self, headers)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A well-formed notification as Chaingateway lists it. `contract_or_native` is a token
/// contract (`type` ERC20) or `"native"` (`type` ETH, no contract); `amount` is the decimal
/// amount as a string, or `None` for `null`.
pub fn notification(
    id: &str,
    txid: &str,
    contract_or_native: &str,
    to: &str,
    amount: Option<&str>,
    created_at: jiff::Timestamp,
) -> Value {
    let native = contract_or_native.eq_ignore_ascii_case("native");
    let time = format!("{}.000000Z", created_at.strftime("%Y-%m-%dT%H:%M:%S"));
    json!({
        "id": id,
        "webhook_id": "9ba897da-7651-4df6-80ef-11c898b195e5",
        "txid": txid,
        "type": if native { "ETH" } else { "ERC20" },
        "contractaddress": if native { Value::Null } else { json!(contract_or_native) },
        "from": "0xb23360ccdd9ed1b15d45e5d3824bb409c8d7c460",
        "to": to,
        "tokenid": null,
        "amount": amount,
        "blocknumber": "19499380",
        "status": "success",
        "url": "https://merchant.example/webhooks/chaingateway",
        "success": true,
        "attempts": 1,
        "created_at": time,
        "updated_at": time,
        "network": "mainnet",
        "blockchain": "ethereum",
    })
}

fn id_of(record: &Value) -> Option<String> {
    match record.get("id")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
