//! The operator console (docs/operations.md, "The operator console") on a real `serve` over
//! HTTP, on every backend: login, sessions, lock-out, CSRF refusals, the overview, the
//! exceptions with their search, and a decision made in a form, which goes through the same
//! path as `payrecon exceptions accept`. The same in a real browser: `console/browser.rs`.

mod browser;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use payrecon::console::operators::Operators;
use payrecon::domain::State;
use payrecon_testkit::inspect::Inspect;

use crate::api::NO_RUNS;
use crate::cli::harness::{payrecon, World};
use crate::exceptions::{all, count, id, one, order, pay};
use crate::serve::{series, Served};

/// `ana` and `cy`, with these passwords.
const ANA: &str = "correct horse battery staple";
const CY: &str = "another long passphrase";

/// The operators file of `w`, and a config with the console on (and `extra`).
fn console_config(w: &World, extra: &str) -> PathBuf {
    let file = w.dir.path().join("operators");
    let mut ops = Operators::default();
    ops.set("ana", ANA).unwrap();
    ops.set("cy", CY).unwrap();
    ops.save(&file).unwrap();
    w.config(&format!(
        "{NO_RUNS}\n[console]\nenabled = true\noperators_file = \"{}\"\n{extra}",
        file.display()
    ))
}

/// A browser without JavaScript: follows no redirect, keeps cookies.
pub(crate) struct Agent {
    http: reqwest::Client,
    base: String,
    cookies: BTreeMap<String, String>,
    /// The `Set-Cookie` headers of the last answer, whole.
    pub set_cookie: Vec<String>,
}

pub(crate) struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub csp: Option<String>,
    pub body: String,
}

impl Page {
    /// The value of the first hidden field `name`.
    pub fn hidden(&self, name: &str) -> String {
        let at = format!("name=\"{name}\" value=\"");
        let start = self
            .body
            .find(&at)
            .unwrap_or_else(|| panic!("no {name} in {}", self.body))
            + at.len();
        self.body[start..].split('"').next().unwrap().to_string()
    }
}

impl Agent {
    pub fn new(base: &str) -> Agent {
        Agent {
            // A connection per request: a server may close a kept-alive connection after an
            // answer, and a pooled client can send the next POST on it before it sees the close
            // (`IncompleteMessage` on a POST, seen once in a full run; no form is resent).
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            base: base.to_string(),
            cookies: BTreeMap::new(),
            set_cookie: Vec::new(),
        }
    }

    async fn send(&mut self, req: reqwest::RequestBuilder) -> Page {
        let cookie: Vec<String> = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let resp = req
            .header("cookie", cookie.join("; "))
            .send()
            .await
            .unwrap();
        self.set_cookie.clear();
        for v in resp.headers().get_all("set-cookie") {
            let v = v.to_str().unwrap().to_string();
            let (kv, _) = v.split_once(';').unwrap_or((&v, ""));
            let (k, val) = kv.split_once('=').unwrap();
            match val.is_empty() {
                true => self.cookies.remove(k),
                false => self.cookies.insert(k.to_string(), val.to_string()),
            };
            self.set_cookie.push(v);
        }
        let h = |n: &str| {
            resp.headers()
                .get(n)
                .map(|v| v.to_str().unwrap().to_string())
        };
        let (location, csp) = (h("location"), h("content-security-policy"));
        Page {
            status: resp.status().as_u16(),
            location,
            csp,
            body: resp.text().await.unwrap(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let req = self.http.get(format!("{}{path}", self.base));
        self.send(req).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        let req = self.http.post(format!("{}{path}", self.base)).form(form);
        self.send(req).await
    }

    /// Logs in as `name`: the login page's answer to the form.
    pub async fn login(&mut self, name: &str, password: &str) -> Page {
        let form = self.get("/console/login").await;
        assert_eq!(form.status, 200, "{}", form.body);
        let csrf = form.hidden("csrf");
        self.post(
            "/console/login",
            &[("name", name), ("password", password), ("csrf", &csrf)],
        )
        .await
    }
}

async fn logins(s: &Served, outcome: &str) -> Option<f64> {
    series(
        &s.metrics().await,
        "payrecon_console_logins_total",
        &[("outcome", outcome)],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_sessions_lock_out_and_logout() {
    let (_guard, urls) = crate::support::backends().await;
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), urls[0].clone()).await;
    let served = Served::start(&console_config(&w, "")).await;
    let mut a = Agent::new(&served.base);
    assert_eq!(logins(&served, "failed").await, Some(0.0));

    // No session: a page goes to the login, a form is refused.
    let p = a.get("/console").await;
    assert_eq!(
        (p.status, p.location.as_deref()),
        (303, Some("/console/login"))
    );
    assert_eq!(
        a.post("/console/logout", &[("csrf", "x")]).await.status,
        403
    );

    // The login form: its own cookie, a strict policy.
    let form = a.get("/console/login").await;
    let csp = form.csp.clone().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(!form.body.contains("<script"), "{}", form.body);
    // Without the form's token: refused, counted as failed.
    let p = a
        .post("/console/login", &[("name", "ana"), ("password", ANA)])
        .await;
    assert_eq!(p.status, 403);

    let p = a.login("ana", "wrong").await;
    assert_eq!(p.status, 401);
    assert!(p.body.contains("Wrong name or password"), "{}", p.body);
    assert_eq!(logins(&served, "failed").await, Some(2.0));

    // Five failures for cy within a minute lock cy, even with the right password; ana is not.
    for _ in 0..5 {
        assert_eq!(a.login("cy", "wrong").await.status, 401);
    }
    let p = a.login("cy", CY).await;
    assert_eq!(p.status, 429, "{}", p.body);
    assert_eq!(logins(&served, "locked").await, Some(1.0));

    let p = a.login("ana", ANA).await;
    assert_eq!((p.status, p.location.as_deref()), (303, Some("/console")));
    let session = a
        .set_cookie
        .iter()
        .find(|c| c.starts_with("payrecon_console="))
        .unwrap();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(session.contains(attr), "{session}");
    }
    // Served on loopback: no Secure (a browser would drop the cookie over plain HTTP).
    assert!(!session.contains("Secure"), "{session}");
    assert_eq!(logins(&served, "ok").await, Some(1.0));

    let p = a.get("/console").await;
    assert_eq!(p.status, 200, "{}", p.body);
    assert!(p.body.contains("Waiting for a person") && p.body.contains("Log out ana"));
    assert!(p.body.contains("No gap in the last 30 days"), "{}", p.body);
    let token = a.cookies["payrecon_console"].clone();
    assert!(
        !p.body.contains(&token),
        "the session token is never rendered"
    );
    assert!(!p.body.contains(ANA));

    // Logout needs the form's token; then the session is gone.
    let csrf = p.hidden("csrf");
    assert_eq!(
        a.post("/console/logout", &[("csrf", "nope")]).await.status,
        403
    );
    assert_eq!(a.get("/console").await.status, 200);
    let p = a.post("/console/logout", &[("csrf", &csrf)]).await;
    assert_eq!(p.status, 303);
    let mut replay = Agent::new(&served.base);
    replay.cookies.insert("payrecon_console".into(), token);
    assert_eq!(
        replay.get("/console").await.status,
        303,
        "a logged-out token is dead"
    );
    assert_eq!(a.get("/console/nothing-here").await.status, 303);
    let m = served.metrics().await;
    assert_eq!(
        series(
            &m,
            "payrecon_console_requests_total",
            &[("route", "POST /console/logout"), ("status", "403")]
        ),
        Some(2.0),
        "{m}"
    );
}

/// An amount_mismatch exception on X-1 (30 USDT due, 20 paid), opened by a run.
async fn held(w: &World, config: &Path) -> (String, String) {
    let r = order(w, 1, 30).await;
    let tx = pay(w, 1, 20, "n-1");
    payrecon(config, &["run"]).await.assert_code(0);
    let x = id(one(&all(config).await, "amount_mismatch", &r));
    (x, tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_finds_and_accepts_an_exception_and_refusals_change_nothing() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = console_config(&w, "");
        let (x, tx) = held(&w, &config).await;
        let served = Served::start(&config).await;
        let mut a = Agent::new(&served.base);
        assert_eq!(a.login("ana", ANA).await.status, 303);

        // The overview plots the run's gap today (an SVG without text or inline style).
        let p = a.get("/console").await;
        let at = p.body.find("<svg");
        let svg = &p.body[at.unwrap_or_else(|| panic!("{url}: no plot in {}", p.body))..];
        assert!(
            svg.contains("<polyline") && !svg.contains("style="),
            "{url}: {svg}"
        );
        assert!(p.body.contains("amount_mismatch 1"), "{url}: {}", p.body);
        // X-1 is held, listed with what it is short of.
        assert!(
            p.body.contains("1 held") && p.body.contains("href=\"/console/orders/X-1\""),
            "{url}: {}",
            p.body
        );
        assert!(
            p.body.contains("10 USDT"),
            "{url}: the shortfall {}",
            p.body
        );

        // The search box finds it by order ref and by transaction hash (in any case).
        for q in ["X-1", &tx.to_uppercase().replacen("0X", "0x", 1)] {
            let p = a.get(&format!("/console/exceptions?q={q}")).await;
            assert_eq!(p.status, 200, "{url}: {}", p.body);
            assert!(
                p.body.contains(&format!("/console/exceptions/{x}\"")),
                "{url} {q}: {}",
                p.body
            );
        }
        let p = a.get("/console/exceptions?q=X-2").await;
        assert!(p.body.contains("No exception matches"), "{}", p.body);
        let p = a.get("/console/exceptions?kind=late_payment").await;
        assert!(p.body.contains("No exception matches"), "{}", p.body);
        // By age: first seen just now, so not among those seen over a day ago.
        let p = a.get("/console/exceptions?age=1d").await;
        assert!(p.body.contains("No exception matches"), "{url}: {}", p.body);
        let p = a.get("/console/exceptions?age=").await;
        assert!(
            p.body.contains(&format!("/console/exceptions/{x}\"")),
            "{url}: {}",
            p.body
        );

        let page = a.get(&format!("/console/exceptions/{x}")).await;
        assert_eq!(page.status, 200);
        assert!(
            page.body.contains("Held: order X-1 was paid short"),
            "{}",
            page.body
        );
        assert!(
            page.body.contains("20 USDT"),
            "amounts in tokens: {}",
            page.body
        );
        let csrf = page.hidden("csrf");
        let decide = format!("/console/exceptions/{x}/decide");
        let open_where = format!("id = {x} AND status = 'open'");

        // Refusals: no token, a wrong one, no reason, too large a body, no session. Nothing moves.
        let p = a
            .post(&decide, &[("action", "accept"), ("reason", "paid by card")])
            .await;
        assert_eq!(p.status, 403, "{url}");
        let p = a
            .post(
                &decide,
                &[("csrf", "0000"), ("action", "accept"), ("reason", "r")],
            )
            .await;
        assert_eq!(p.status, 403);
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", "  ")],
            )
            .await;
        assert_eq!(p.status, 422);
        let big = "x".repeat(64 * 1024);
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", &big)],
            )
            .await;
        assert_eq!(p.status, 413);
        let mut stranger = Agent::new(&served.base);
        let p = stranger
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", "r")],
            )
            .await;
        assert_eq!(p.status, 403);
        assert_eq!(
            count(&w, "payrecon_exceptions", &open_where).await,
            1,
            "{url}: a refused form changed nothing"
        );
        assert_eq!(
            w.store.order_by_ref("X-1").await.unwrap().unwrap().state,
            State::Unpaid
        );

        let p = a
            .post(
                &decide,
                &[
                    ("csrf", &csrf),
                    ("action", "accept"),
                    ("reason", "paid the rest by card"),
                ],
            )
            .await;
        assert_eq!(p.status, 303, "{url}: {}", p.body);
        assert_eq!(count(&w, "payrecon_exceptions", &open_where).await, 0);
        assert_eq!(
            w.store.order_by_ref("X-1").await.unwrap().unwrap().state,
            State::Final
        );
        let done = one(&all(&config).await, "amount_mismatch", "X-1").clone();
        assert_eq!(done["resolved_by"], "ana", "{done}");
        assert_eq!(done["note"], "paid the rest by card");
        let page = a.get(&format!("/console/exceptions/{x}")).await;
        assert!(page.body.contains("accepted by ana"), "{}", page.body);
        let p = a.get("/console").await;
        assert!(p.body.contains("No order is held."), "{url}: {}", p.body);

        // The same form again lost the race to itself: who and when, nothing changed.
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "dismiss"), ("reason", "again")],
            )
            .await;
        assert_eq!(p.status, 409);
        assert!(
            p.body.contains("resolved already: accepted by ana at"),
            "{}",
            p.body
        );
        assert_eq!(a.get("/console/exceptions/999999").await.status, 404);

        // Runs in keyset pages (a second run to page over), and the balances page.
        payrecon(&config, &["run"]).await.assert_code(0);
        let first = w.store.runs_page(None, 1).await.unwrap();
        let bound = (first[0].started_at.as_str(), first[0].id.as_str());
        let second = w.store.runs_page(Some(bound), 1).await.unwrap();
        assert_eq!((first.len(), second.len()), (1, 1), "{url}");
        assert!(
            second[0].started_at < first[0].started_at,
            "{url}: {first:?} {second:?}"
        );
        let bound = (second[0].started_at.as_str(), second[0].id.as_str());
        assert!(
            w.store.runs_page(Some(bound), 1).await.unwrap().is_empty(),
            "{url}"
        );
        let p = a.get("/console/runs").await;
        assert_eq!(p.status, 200, "{url}: {}", p.body);
        assert_eq!(p.body.matches("<td>cli</td>").count(), 2, "{}", p.body);
        let p = a.get("/console/balances").await;
        assert!(
            p.body.contains("left a difference nothing explains") && p.body.contains("None."),
            "{}",
            p.body
        );
        let m = served.metrics().await;
        let decided = |status| {
            series(
                &m,
                "payrecon_console_requests_total",
                &[
                    ("route", "POST /console/exceptions/{id}/decide"),
                    ("status", status),
                ],
            )
        };
        assert_eq!(
            (decided("403"), decided("303"), decided("413")),
            (Some(3.0), Some(1.0), Some(1.0)),
            "{url}"
        );
    }
}

/// A missing operators file with the console on stops serve, naming the key.
#[tokio::test]
async fn a_missing_operators_file_is_a_config_error_naming_the_key() {
    let (_guard, urls) = crate::support::backends().await;
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), urls[0].clone()).await;
    let config = w.config(&format!(
        "{NO_RUNS}\n[console]\nenabled = true\noperators_file = \"{}\"\n",
        w.dir.path().join("absent").display()
    ));
    let out = payrecon(&config, &["serve"]).await;
    out.assert_code(1);
    assert!(
        out.stderr.contains("console.operators_file") && out.stderr.contains("cannot be read"),
        "{}",
        out.stderr
    );
    // `check` says so too, in its console line; and counts the operators once there are some.
    let out = payrecon(&config, &["check"]).await;
    out.assert_code(1);
    assert!(
        out.stdout
            .contains("FAILED console: console.operators_file"),
        "{}",
        out.stdout
    );
    let out = payrecon(&console_config(&w, ""), &["check"]).await;
    assert!(
        out.stdout.contains("ok     console: 2 operator(s)"),
        "{}",
        out.stdout
    );
}

/// With `trusted_header`, the header names the operator only from `trusted_proxies`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxy_names_the_operator_and_no_one_else_does() {
    let (_guard, urls) = crate::support::backends().await;
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), urls[0].clone()).await;
    for (proxies, believed) in [("127.0.0.1", true), ("10.0.0.1", false)] {
        let extra =
            format!("trusted_header = \"X-Forwarded-User\"\ntrusted_proxies = [\"{proxies}\"]\n");
        let served = Served::start(&console_config(&w, &extra)).await;
        let resp = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(format!("{}/console", served.base))
            .header("X-Forwarded-User", "fay@shop.example")
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        match believed {
            true => assert!(
                status == 200 && body.contains("Log out fay@shop.example"),
                "{status}: {body}"
            ),
            false => assert_eq!(status, 303, "from {proxies}: {body}"),
        }
    }
}

/// An order paid but not final counts its confirmations against the chain's head.
#[tokio::test]
async fn an_order_paid_on_chain_counts_its_confirmations() {
    let (_guard, urls) = crate::support::backends().await;
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), urls[0].clone()).await;
    let extra = "trusted_header = \"X-Forwarded-User\"\ntrusted_proxies = [\"127.0.0.1\"]\n";
    let config = console_config(&w, extra);
    let r = order(&w, 1, 30).await;
    // In a block with 2 more on top: 3 confirmations of the sandbox's 12.
    crate::exceptions::pay_mined(&w, 1, 30_000_000, "n-1", 2);
    payrecon(&config, &["run"]).await.assert_code(0);
    let served = Served::start(&config).await;
    let body = reqwest::Client::new()
        .get(format!("{}/console/orders/{r}", served.base))
        .header("X-Forwarded-User", "fay@shop.example")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        body.contains("Paid on chain, waiting for confirmations: 3 of 12 (block"),
        "{body}"
    );
}

/// The order's page tells what happened to it, oldest first, and why it is (not) paid; a dead
/// event is sent again from the events page and then shows as delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_tells_its_story_and_a_dead_event_is_sent_again() {
    use crate::events::receiver::{Receiver, Reply};
    let (_guard, urls) = crate::support::backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let receiver = Receiver::start().await;
        // X-1's first event fails twice: dead after the one retry.
        receiver.script_order("X-1", [Reply::status(500), Reply::status(500)]);
        let events = crate::events::events_table(&receiver.url(), 1, "");
        let config = console_config(&w, &format!("\n{events}"));
        let (x, tx) = held(&w, &config).await;
        let served = Served::start(&config).await;
        let mut a = Agent::new(&served.base);
        assert_eq!(a.login("ana", ANA).await.status, 303);
        let p = a.get("/console/orders/X-1").await;
        assert_eq!(p.status, 200, "{url}: {}", p.body);
        assert!(
            p.body
                .contains("Held: 20 USDT of 30 USDT paid, 10 USDT short"),
            "{}",
            p.body
        );
        assert!(
            p.body.contains(&tx),
            "the payment in the timeline: {}",
            p.body
        );
        // What the run saw: the provider's record beside the ledger's state.
        assert!(
            p.body.contains("sandbox saw") && p.body.contains("(amount_mismatch), the ledger had"),
            "{url}: the run's finding in the timeline: {}",
            p.body
        );
        let csrf = p.hidden("csrf");
        let decide = format!("/console/exceptions/{x}/decide");
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", "by card")],
            )
            .await;
        assert_eq!(p.status, 303);

        crate::support::wait_until("the event to die", Duration::from_secs(30), || async {
            a_dead(&served.base, &csrf, &a.cookies).await
        })
        .await;
        let dead = a.get("/console/events?status=dead").await;
        let id = dead
            .body
            .split("name=\"id\" value=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        // Replay needs the form's token too.
        assert_eq!(
            a.post("/console/events/replay", &[("id", &id)])
                .await
                .status,
            403
        );
        let p = a
            .post("/console/events/replay", &[("csrf", &csrf), ("id", &id)])
            .await;
        assert_eq!(p.status, 200, "{}", p.body);
        assert!(
            p.body.contains("1 event(s) will be sent again"),
            "{}",
            p.body
        );
        crate::support::wait_until(
            "the event to be delivered",
            Duration::from_secs(30),
            || async { !receiver.delivered().is_empty() },
        )
        .await;
        let p = a.get("/console/orders/X-1").await;
        for want in [
            "Paid: 20 USDT of 30 USDT final since",
            "accepted by ana: by card",
            "delivered after 1 attempt(s)",
            "unpaid → final (operator",
        ] {
            assert!(p.body.contains(want), "{url}: {want:?} in {}", p.body);
        }
        assert_eq!(a.get("/console/orders/X-404").await.status, 404);
        // Both events delivered (the payment's, replayed, and the transition's): the overview
        // plots the payment's delay (today's counts first read here).
        crate::support::wait_until("both events delivered", Duration::from_secs(30), || async {
            receiver.delivered().len() >= 2
        })
        .await;
        let p = a.get("/console").await;
        assert!(
            p.body.contains("From payment to event") && p.body.contains(" delivered)"),
            "{url}: {}",
            p.body
        );
        let plots = p.body.matches("<svg").count();
        assert_eq!(plots, 2, "{url}: gaps and delays: {}", p.body);

        // The events list pages backwards through the outbox's order.
        let every = crate::events::all_events(&w.store).await;
        assert!(every.len() >= 2, "{url}: {every:?}");
        let newest = every.last().unwrap().seq;
        let older = w
            .store
            .list_events(&payrecon::store::EventFilter {
                before_seq: Some(newest),
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        let ids =
            |v: &[payrecon::store::EventRow]| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&older), ids(&every[..every.len() - 1]), "{url}");
    }
}

/// Whether the events page lists a dead event (with a fresh agent on the same session).
async fn a_dead(base: &str, _csrf: &str, cookies: &BTreeMap<String, String>) -> bool {
    let mut a = Agent::new(base);
    a.cookies = cookies.clone();
    a.get("/console/events?status=dead")
        .await
        .body
        .contains("name=\"id\" value=\"")
}
