//! Every status of the API on a real `serve`, on SQLite and PostgreSQL, with what each leaves
//! in the database (nothing, for every refusal) and in the log (never the token).

use payrecon::domain::State;
use serde_json::json;

use super::{answer, client, get, named, order, post, serve_api, Answer, TOKEN, USDT};
use crate::cli::harness::{addr, World};
use crate::serve::Served;

async fn orders(w: &World) -> i64 {
    w.count("orders").await
}

async fn post_raw(s: &Served, token: Option<&str>, ctype: &str, body: Vec<u8>) -> Answer {
    let mut req = client()
        .post(format!("{}/v1/orders", s.base))
        .header("content-type", ctype)
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    answer(req.send().await.unwrap()).await
}

fn problem(a: &Answer, status: u16) {
    assert_eq!(a.status, status, "{a:?}");
    assert_eq!(a.content_type, "application/problem+json", "{a:?}");
    assert_eq!(a.body["status"], status, "{a:?}");
    assert_eq!(a.body["type"], "about:blank");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_of_post_and_get_on_both_databases() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let mut s = serve_api(&w, "").await;
        let pay_to = addr(1).to_string();
        let body = order("A-1", &pay_to, "25000000");

        // 401: no token, a wrong one, another scheme; nothing written.
        let raw = serde_json::to_vec(&body).unwrap();
        for token in [None, Some("wrong-token-0123456789"), Some(&TOKEN[1..])] {
            let a = post_raw(&s, token, "application/json", raw.clone()).await;
            problem(&a, 401);
            assert_eq!(
                a.www_authenticate.as_deref(),
                Some("Bearer realm=\"payrecon\"")
            );
        }
        let basic = client()
            .post(format!("{}/v1/orders", s.base))
            .basic_auth("x", Some(TOKEN))
            .json(&body)
            .send()
            .await
            .unwrap();
        problem(&answer(basic).await, 401);
        assert_eq!(orders(&w).await, 0, "{url}");

        // 201, then the same again 200 with the same order; the ref with another amount 409.
        let created = post(&s, &body).await;
        assert_eq!(created.status, 201, "{url}: {created:?}");
        assert_eq!(created.location.as_deref(), Some("/v1/orders/A-1"));
        assert_eq!(created.body["state"], "unpaid");
        assert_eq!(created.body["amount_due"], "25000000");
        assert_eq!(created.body["asset"], USDT.to_lowercase());
        assert_eq!(created.body["pay_to"], pay_to);
        assert!(created.body["created_at"].is_string());
        let again = post(&s, &body).await;
        assert_eq!(again.status, 200, "{again:?}");
        assert_eq!(again.body, created.body);
        // The same order in checksum case and with the asset in upper case is the same.
        let upper = json!({"order_ref": "A-1", "chain": "ethereum", "pay_to": pay_to.to_uppercase().replace("0X", "0x"),
                           "asset": USDT, "amount_due": "25000000"});
        assert_eq!(post(&s, &upper).await.status, 200);
        let other = post(&s, &order("A-1", &pay_to, "26000000")).await;
        problem(&other, 409);
        assert_eq!(other.body["conflicting_fields"], json!(["amount_due"]));
        assert_eq!(orders(&w).await, 1, "{url}");
        assert_eq!(
            w.store.order_view("A-1").await.unwrap().unwrap().amount_due,
            "25000000"
        );

        // 422 naming every bad field; nothing written.
        let bad = json!({"order_ref": "", "chain": "ethereum",
            "pay_to": "0x52908400098527886E0F7030069857D2E4169Ee7", "asset": "0x0000000000000000000000000000000000000001",
            "amount_due": 25, "expires_at": "soon", "color": "red"});
        let a = post(&s, &bad).await;
        problem(&a, 422);
        let all = named(&a);
        assert_eq!(
            all[..2],
            ["#/color", "#/amount_due"],
            "shape first: unknown fields and wrong types"
        );
        // ... and they stop none of the other fields' checks: every bad field at once.
        for field in ["#/order_ref", "#/pay_to", "#/asset", "#/expires_at"] {
            assert!(all.iter().any(|f| f == field), "{field} not named: {all:?}");
        }
        assert_eq!(all.len(), 6, "{all:?}");
        let bad = json!({"order_ref": "", "chain": "ethereum",
            "pay_to": "0x52908400098527886E0F7030069857D2E4169Ee7", "asset": "0x0000000000000000000000000000000000000001",
            "amount_due": "115792089237316195423570985008687907853269984665640564039457584007913129639936",
            "expires_at": "soon"});
        let a = post(&s, &bad).await;
        problem(&a, 422);
        assert_eq!(
            named(&a),
            [
                "#/order_ref",
                "#/pay_to",
                "#/asset",
                "#/amount_due",
                "#/expires_at"
            ],
            "{a:?}"
        );
        let other_chain = json!({"order_ref": "B-1", "chain": "polygon", "pay_to": pay_to,
                                 "asset": "native", "amount_due": "1"});
        assert_eq!(named(&post(&s, &other_chain).await), ["#/chain"]);
        // 65 digits fit every database; 66 are more than MariaDB/MySQL's DECIMAL(65,0) keeps:
        // refused there as the field, not a failed statement (a 503).
        let digits = |n: usize, r: &str| {
            json!({"order_ref": r, "chain": "ethereum",
            "pay_to": pay_to, "asset": "native", "amount_due": format!("1{}", "0".repeat(n - 1))})
        };
        assert_eq!(post(&s, &digits(65, "D-65")).await.status, 201, "{url}");
        let a = post(&s, &digits(66, "D-66")).await;
        if url.starts_with("mysql") {
            problem(&a, 422);
            assert_eq!(named(&a), ["#/amount_due"], "{a:?}");
        } else {
            assert_eq!(a.status, 201, "{url}: {a:?}");
        }
        let a = post_raw(
            &s,
            Some(TOKEN),
            "application/json",
            b"{\"order_ref\": ".to_vec(),
        )
        .await;
        problem(&a, 422);
        assert_eq!(named(&a), ["#"]);
        let kept = if url.starts_with("mysql") { 2 } else { 3 };
        assert_eq!(orders(&w).await, kept, "{url}: a refusal writes nothing");

        // 413: announced, and streamed without a length; 415.
        let big = format!("{{\"order_ref\": \"{}\"}}", "x".repeat(70 * 1024)).into_bytes();
        problem(
            &post_raw(&s, Some(TOKEN), "application/json", big.clone()).await,
            413,
        );
        assert_eq!(
            chunked_post(&s, &big).await,
            413,
            "{url}: chunked, no length"
        );
        problem(
            &post_raw(&s, Some(TOKEN), "text/plain", raw.clone()).await,
            415,
        );

        // GET one: 200 with its lists, 404 unknown, 401 without the token.
        let one = get(&s, "/v1/orders/A-1").await;
        assert_eq!(one.status, 200, "{one:?}");
        assert_eq!(one.body["order_ref"], "A-1");
        for list in ["payments", "exceptions", "events"] {
            assert_eq!(one.body[list], json!([]), "{list}");
        }
        problem(&get(&s, "/v1/orders/nope").await, 404);
        let anon = client()
            .get(format!("{}/v1/orders/A-1", s.base))
            .send()
            .await
            .unwrap();
        problem(&answer(anon).await, 401);

        // The document is served as committed, without a token.
        let doc = client()
            .get(format!("{}/v1/openapi.json", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(doc.status(), 200);
        assert_eq!(doc.text().await.unwrap(), payrecon::api::doc::json());

        // Every answer counted by route pattern (never the ref) and status.
        let metrics = s.metrics().await;
        let count = |route: &str, status: &str| {
            crate::serve::series(
                &metrics,
                "payrecon_api_requests_total",
                &[("route", route), ("status", status)],
            )
        };
        let post = "POST /v1/orders";
        let mysql = url.starts_with("mysql");
        for (status, n) in [
            ("201", if mysql { 2.0 } else { 3.0 }),
            ("200", 2.0),
            ("401", 4.0),
            ("409", 1.0),
            ("413", 2.0),
        ] {
            assert_eq!(count(post, status), Some(n), "{url}: {post} {status}");
        }
        assert_eq!(count(post, "422"), Some(if mysql { 5.0 } else { 4.0 }));
        assert_eq!(count(post, "415"), Some(1.0));
        assert_eq!(count(post, "503"), Some(0.0), "created at 0");
        let one = "GET /v1/orders/{order_ref}";
        assert_eq!(count(one, "404"), Some(1.0));
        assert_eq!(count(one, "401"), Some(1.0));
        assert!(!metrics.contains("A-1"), "no order ref in a label");

        let (code, _) = s.stop("TERM", std::time::Duration::from_secs(30)).await;
        assert_eq!(code, Some(0));
        let log = s.proc.stderr();
        assert!(
            !log.contains(TOKEN) && !log.contains(&TOKEN[1..]),
            "the token is never logged"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_pages_in_a_stable_order_and_follows_changes() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let mut s = serve_api(&w, "").await;
        for i in 0..7 {
            let a = post(&s, &order(&format!("L-{i}"), &addr(i).to_string(), "1000")).await;
            assert_eq!(a.status, 201, "{a:?}");
        }
        // Ties on the time are broken by id: all seven at one time, pages of three.
        // (MariaDB/MySQL's DATETIME takes no `T`/`Z`.)
        let tie = if url.starts_with("mysql") {
            "UPDATE orders SET payrecon_updated_at = '2026-01-01 00:00:00'"
        } else {
            "UPDATE orders SET payrecon_updated_at = '2026-01-01T00:00:00.000Z'"
        };
        crate::support::exec(&w.store, tie).await;
        let mut seen: Vec<String> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let q = match &cursor {
                Some(c) => format!("/v1/orders?limit=3&cursor={c}"),
                None => "/v1/orders?limit=3".to_string(),
            };
            let page = get(&s, &q).await;
            assert_eq!(page.status, 200, "{page:?}");
            pages += 1;
            let refs: Vec<String> = page.body["orders"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["order_ref"].as_str().unwrap().to_string())
                .collect();
            seen.extend(refs);
            match page.body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        let expected: Vec<String> = (0..7).map(|i| format!("L-{i}")).collect();
        assert_eq!(
            seen, expected,
            "{url}: every order once, in the order of their changes"
        );
        assert_eq!(pages, 3, "3 + 3 + 1");

        // An order that changes moves after the others; `state` filters.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let moved = crate::support::set_state_raw(&w.store, "L-2", State::Pending).await;
        assert!(moved.unwrap());
        let since = get(&s, "/v1/orders?limit=100").await;
        let last = since.body["orders"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["order_ref"], "L-2", "{url}");
        let updated = last["updated_at"].as_str().unwrap().to_string();
        let pending = get(&s, "/v1/orders?state=pending").await;
        assert_eq!(pending.body["orders"].as_array().unwrap().len(), 1);
        let after = get(&s, &format!("/v1/orders?updated_since={updated}")).await;
        let refs: Vec<&str> = after.body["orders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["order_ref"].as_str().unwrap())
            .collect();
        assert_eq!(refs, ["L-2"], "{url}");

        // A cursor of the other backend's kind is a bad parameter, not a failed query.
        let foreign = if url.starts_with("sqlite") {
            payrecon::api::request::encode_cursor("1764670000123000", 1)
        } else {
            payrecon::api::request::encode_cursor("2026-01-01T00:00:00.000Z", 1)
        };
        let bad = get(&s, &format!("/v1/orders?cursor={foreign}")).await;
        assert_eq!(bad.status, 422, "{url}: {bad:?}");
        assert_eq!(named(&bad), ["cursor"]);

        // Bad parameters, each named.
        let bad = get(&s, "/v1/orders?limit=0&state=paid&cursor=%21&sort=id").await;
        assert_eq!(bad.status, 422);
        assert_eq!(named(&bad), ["cursor", "limit", "sort", "state"]);
        let _ = s.stop("TERM", std::time::Duration::from_secs(30)).await;
    }
}

#[tokio::test]
async fn the_api_is_off_without_a_token() {
    let w = World::sqlite().await;
    let config = w.config(super::NO_RUNS);
    let mut s = Served::start(&config).await;
    let a = post(&s, &order("A-1", &addr(1).to_string(), "1")).await;
    assert_eq!(a.status, 404, "{a:?}");
    assert_eq!(w.count("orders").await, 0);
    let _ = s.stop("TERM", std::time::Duration::from_secs(30)).await;
}

/// POSTs `body` with `Transfer-Encoding: chunked` (no length announced), 8 KiB a chunk, on a
/// raw connection; returns the status of the answer.
async fn chunked_post(s: &Served, body: &[u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = s.base.trim_start_matches("http://");
    let mut conn = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "POST /v1/orders HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.chunks(8 * 1024) {
        let sent = async {
            conn.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            conn.write_all(chunk).await?;
            conn.write_all(b"\r\n").await
        };
        if sent.await.is_err() {
            break; // the server answered and closed before the end: fine
        }
    }
    let _ = conn.write_all(b"0\r\n\r\n").await;
    let mut answer = vec![0u8; 64];
    let n = conn.read(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer[..n]).to_string();
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}
