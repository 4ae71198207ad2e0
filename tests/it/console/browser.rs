//! The console in a real browser: Debian's `chromium`, driven over WebDriver by Debian's
//! `chromium-driver` through `fantoccini`. An operator logs in, searches, opens the exception,
//! accepts it with a reason, sees the order final and its event delivered, replays a dead
//! event; a wrong password is refused, five lock the name, and a form without its CSRF token
//! is refused and changes nothing. With `PAYRECON_BLESS=1` the pages' screenshots in
//! docs/console/ are made again. Skips where chromium or chromedriver is missing (fails under
//! `PAYRECON_TEST_STRICT=1`).

use std::process::Stdio;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

use super::{console_config, held, ANA};
use crate::cli::harness::World;
use crate::events::receiver::{Receiver, Reply};
use crate::serve::Served;
use crate::support::{free_port, wait_until};

/// `CHROMIUM_BIN` and `CHROMEDRIVER_BIN`, else Debian's paths; `None` (skipped) when absent.
fn tools() -> Option<(String, String)> {
    let pick = |var: &str, default: &str| {
        let p = std::env::var(var).unwrap_or_else(|_| default.to_string());
        std::path::Path::new(&p).exists().then_some(p)
    };
    let browser = pick("CHROMIUM_BIN", "/usr/bin/chromium");
    let driver = pick("CHROMEDRIVER_BIN", "/usr/bin/chromedriver");
    match (browser, driver) {
        (Some(b), Some(d)) => Some((b, d)),
        _ => {
            payrecon_testkit::env::skip(
                "chromium or chromedriver is missing (apt-get install chromium chromium-driver)",
            );
            None
        }
    }
}

/// A headless Chromium session; the driver process dies with the returned child.
async fn browser(chromium: &str, driver: &str) -> (Client, tokio::process::Child) {
    let port = free_port();
    let child = tokio::process::Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start chromedriver");
    let url = format!("http://127.0.0.1:{port}");
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1100,1300"],
        }),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        // Plain HTTP: the driver listens on loopback (no TLS stack in the test build).
        match ClientBuilder::new(HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(c) => return (c, child),
            Err(e) if std::time::Instant::now() > deadline => panic!("chromedriver: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The browser is on the login page (sent there for want of a session).
async fn at_login(c: &Client) {
    let url = c.current_url().await.unwrap();
    assert!(url.as_str().ends_with("/console/login"), "{url}");
}

async fn fill(c: &Client, css: &str, text: &str) {
    for _ in 0..100 {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if e.send_keys(text).await.is_ok() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing to fill at {css}");
}

async fn click(c: &Client, css: &str) {
    // The element may be on a page still loading.
    for _ in 0..100 {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if e.click().await.is_ok() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing to click at {css}");
}

async fn text(c: &Client) -> String {
    // A click that navigates returns before the new page is there: a body read meanwhile
    // can be the old page's, gone (stale) by the time its text is asked for.
    for _ in 0..50 {
        if let Ok(body) = c.find(Locator::Css("body")).await {
            if let Ok(t) = body.text().await {
                return t;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no page body to read");
}

/// The page's text once it contains `want` (within 10 s): the page after a click.
async fn see(c: &Client, want: &str) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        last = text(c).await;
        if last.contains(want) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{want:?} never showed; the page says:\n{last}");
}

/// Writes the page's screenshot to docs/console/`name`.png when blessing; else checks that
/// the page has one.
async fn shot(c: &Client, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/console");
    let file = dir.join(format!("{name}.png"));
    if std::env::var("PAYRECON_BLESS").is_ok_and(|v| v == "1") {
        let png = c.screenshot().await.unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&file, png).unwrap();
    }
    let head = std::fs::read(&file).unwrap_or_default();
    assert!(
        head.starts_with(b"\x89PNG"),
        "{} is no screenshot: PAYRECON_BLESS=1 cargo nextest run --cargo-profile bench --test it console::browser",
        file.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_settles_an_exception_in_a_real_browser() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let (_guard, urls) = crate::support::backends().await;
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), urls[0].clone()).await;
    let receiver = Receiver::start().await;
    receiver.script_order("X-1", [Reply::status(500), Reply::status(500)]);
    let events = format!("\n{}", crate::events::events_table(&receiver.url(), 1, ""));
    let config = console_config(&w, &events);
    let (x, _tx) = held(&w, &config).await;
    let served = Served::start(&config).await;
    let (c, _driver) = browser(&chromium, &driver).await;
    let base = &served.base;

    // A wrong password is refused; five in a minute lock the name; the right one opens the
    // overview.
    c.goto(&format!("{base}/console")).await.unwrap();
    at_login(&c).await;
    shot(&c, "login").await;
    fill(&c, "input[name=name]", "ana").await;
    fill(&c, "input[name=password]", "not it").await;
    click(&c, "button[type=submit]").await;
    see(&c, "Wrong name or password").await;
    for _ in 0..5 {
        c.goto(&format!("{base}/console/login")).await.unwrap();
        fill(&c, "input[name=name]", "eve").await;
        fill(&c, "input[name=password]", "guess").await;
        click(&c, "button[type=submit]").await;
        see(&c, "Wrong name or password").await;
    }
    c.goto(&format!("{base}/console/login")).await.unwrap();
    fill(&c, "input[name=name]", "eve").await;
    fill(&c, "input[name=password]", "guess").await;
    click(&c, "button[type=submit]").await;
    see(&c, "Too many failed logins for this name").await;
    c.goto(&format!("{base}/console/login")).await.unwrap();
    fill(&c, "input[name=name]", "ana").await;
    fill(&c, "input[name=password]", ANA).await;
    click(&c, "button[type=submit]").await;
    let overview = see(&c, "Waiting for a person").await;
    assert!(overview.contains("amount_mismatch"), "{overview}");
    shot(&c, "overview").await;

    // Search by the order's ref, open the exception, accept it with a reason.
    c.goto(&format!("{base}/console/exceptions")).await.unwrap();
    fill(&c, "input[name=q]", "X-1").await;
    click(&c, "form[action='/console/exceptions'] button").await;
    wait_until("the search's page", Duration::from_secs(10), || async {
        c.current_url()
            .await
            .is_ok_and(|u| u.as_str().contains("q=X-1"))
    })
    .await;
    see(&c, "amount_mismatch").await;
    shot(&c, "exceptions").await;
    click(&c, &format!("a[href='/console/exceptions/{x}']")).await;
    see(&c, "Held: order X-1 was paid short").await;
    shot(&c, "exception").await;
    let accept = "form.decide:has(input[name=action][value=accept])";

    // A form that lost its CSRF token is refused, and nothing changes.
    let strip = format!("document.querySelector(\"{accept} input[name=csrf]\").remove()");
    c.execute(&strip, vec![]).await.unwrap();
    fill(&c, &format!("{accept} input[name=reason]"), "no token").await;
    click(&c, &format!("{accept} button")).await;
    see(&c, "The form's token is missing or wrong").await;
    c.goto(&format!("{base}/console/exceptions/{x}"))
        .await
        .unwrap();
    let still = see(&c, "Held: order X-1 was paid short").await;
    assert!(!still.contains("accepted by"), "{still}");

    fill(
        &c,
        &format!("{accept} input[name=reason]"),
        "paid the rest by card",
    )
    .await;
    click(&c, &format!("{accept} button")).await;
    see(&c, "accepted by ana").await;

    // The event dies (the receiver answers 500 twice), is sent again, and is delivered.
    wait_until("the event to die", Duration::from_secs(30), || async {
        c.goto(&format!("{base}/console/events?status=dead"))
            .await
            .unwrap();
        text(&c).await.contains("Send again")
    })
    .await;
    shot(&c, "events").await;
    click(&c, "form[action='/console/events/replay'] button").await;
    see(&c, "1 event(s) will be sent again").await;
    wait_until(
        "the event to be delivered",
        Duration::from_secs(30),
        || async { !receiver.delivered().is_empty() },
    )
    .await;
    c.goto(&format!("{base}/console/orders/X-1")).await.unwrap();
    let story = text(&c).await;
    assert!(
        story.contains("Paid: 20 USDT of 30 USDT final since"),
        "{story}"
    );
    assert!(story.contains("delivered after 1 attempt(s)"), "{story}");
    shot(&c, "order").await;

    // Logging out ends the session: the console asks for a login again.
    click(&c, "header form button").await;
    c.goto(&format!("{base}/console/exceptions")).await.unwrap();
    at_login(&c).await;
    c.close().await.unwrap();
}
