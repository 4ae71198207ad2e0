//! The expected-payments API (docs/api.md) on a real `serve`, on SQLite and PostgreSQL: every
//! status, idempotency, conflicts, paging; the OpenAPI document; `payrecon orders add|import`;
//! and a shop's whole loop: register with curl, pay on chain, hear back by the reference
//! receiver.

mod doc;
mod orders_cli;
mod races;
mod shop;
mod statuses;

use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::harness::World;
use crate::serve::Served;

/// The API token of these tests.
pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";
/// A schedule that does not run while a test does (1 January, midnight).
pub(crate) const NO_RUNS: &str = "[schedule]\ncron = \"0 0 0 1 1 *\"\n";
/// The sandbox's USDT contract in EIP-55 case.
pub(crate) const USDT: &str = "0xdAC17F958D2ee523a2206206994597C13D831ec7";

/// A `serve` with the API on (and `extra` config), on `w`'s database.
pub(crate) async fn serve_api(w: &World, extra: &str) -> Served {
    let config = w.config(&format!("{NO_RUNS}\n[api]\ntoken = \"{TOKEN}\"\n{extra}"));
    Served::start(&config).await
}

/// An HTTP answer: status, content type, headers we look at, and the body as JSON (Null when
/// it is not JSON).
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub content_type: String,
    pub location: Option<String>,
    pub www_authenticate: Option<String>,
    pub body: Value,
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

pub(crate) async fn answer(resp: reqwest::Response) -> Answer {
    let h = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let status = resp.status().as_u16();
    let content_type = h("content-type").unwrap_or_default();
    let location = h("location");
    let www_authenticate = h("www-authenticate");
    let text = resp.text().await.unwrap_or_default();
    Answer {
        status,
        content_type,
        location,
        www_authenticate,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

/// `POST /v1/orders` with the token and a JSON body.
pub(crate) async fn post(s: &Served, body: &Value) -> Answer {
    let resp = client()
        .post(format!("{}/v1/orders", s.base))
        .bearer_auth(TOKEN)
        .json(body)
        .send()
        .await
        .unwrap();
    answer(resp).await
}

/// `GET path` with the token.
pub(crate) async fn get(s: &Served, path: &str) -> Answer {
    let resp = client()
        .get(format!("{}{path}", s.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    answer(resp).await
}

/// An order for the sandbox's USDT on ethereum, due `due` base units to `pay_to`.
pub(crate) fn order(order_ref: &str, pay_to: &str, due: &str) -> Value {
    json!({"order_ref": order_ref, "chain": "ethereum", "pay_to": pay_to,
           "asset": USDT, "amount_due": due})
}

/// The pointers (or parameters) a 422 names, in order.
pub(crate) fn named(a: &Answer) -> Vec<String> {
    a.body["errors"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|e| {
            e["pointer"]
                .as_str()
                .or(e["parameter"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}
