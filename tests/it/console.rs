//! The operator console (docs/operations.md, "The operator console") on a real `serve` over
//! HTTP, on every backend: login, sessions, lock-out, CSRF refusals, the overview, the
//! exceptions with their search, and a decision made in a form, which goes through the same
//! path as `payrecon exceptions accept`. The same in a real browser: `console/browser.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use payrecon::console::operators::Operators;

use crate::api::NO_RUNS;
use crate::cli::harness::{payrecon, World};
use crate::exceptions::{all, id, one, order, pay};

mod access;
mod browser;
mod exceptions;
mod orders;

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

/// An amount_mismatch exception on X-1 (30 USDT due, 20 paid), opened by a run.
async fn held(w: &World, config: &Path) -> (String, String) {
    let r = order(w, 1, 30).await;
    let tx = pay(w, 1, 20, "n-1");
    payrecon(config, &["run"]).await.assert_code(0);
    let x = id(one(&all(config).await, "amount_mismatch", &r));
    (x, tx)
}
