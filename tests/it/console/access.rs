//! Who gets into the console: login, sessions, lock-out and logout (with the login metrics), a
//! missing operators file that stops serve naming its key, and a trusted proxy's header that
//! names the operator only when it comes from a trusted address.

use crate::api::NO_RUNS;
use crate::cli::harness::{payrecon, World};
use crate::serve::{series, Served};

use super::{console_config, Agent, ANA, CY};

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
