//! The operator console (docs/operations.md, "The operator console") on `serve`'s listener, for
//! support and finance: server-rendered HTML (maud, checked at compile time) that works without
//! JavaScript, under a strict Content-Security-Policy. `auth.rs` knows who is at it (sessions,
//! lock-out, CSRF tokens, or a trusted proxy's header); `pages.rs` answers each route;
//! `view.rs` draws them. Decisions go through the engine's operator path, as `payrecon
//! exceptions accept|attach|dismiss` do.
//!
//! Pages: the overview with its plots (`plot.rs`), the exceptions (filters, search, keyset
//! pages), an exception's page with its decisions, an order's story and the events with replay
//! (`story.rs`), the runs and the balances.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::assets::Assets;
use crate::config::Config;
use crate::engine::Engine;

mod auth;
pub mod operators;
mod pages;
mod plot;
mod query;
mod story;
mod view;

use auth::{Auth, Who};
use operators::Operators;

/// The key the operators file is named by in errors.
const KEY: &str = "console.operators_file";
/// A form body larger than this is refused (413).
const MAX_FORM: usize = 16 * 1024;

/// Why the console cannot start (a configuration error naming the key).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConsoleError(pub String);

pub struct Console {
    engine: Arc<Engine>,
    config: Config,
    assets: Assets,
    operators_file: PathBuf,
    trusted_header: Option<String>,
    trusted_proxies: Vec<IpAddr>,
    auth: Auth,
    plots: plot::Plots,
    /// Cookies carry `Secure` unless the listener is on loopback.
    secure: bool,
}

impl Console {
    /// The console of `config` on a listener at `listen`. The operators file must be readable
    /// and valid (unless a trusted header names the operators); it is read again at each login,
    /// so `payrecon operators add` takes effect without a restart.
    pub fn load(
        config: &Config,
        engine: Arc<Engine>,
        listen: SocketAddr,
    ) -> Result<Console, ConsoleError> {
        let c = &config.console;
        if c.trusted_header.is_none() || c.operators_file.exists() {
            Operators::load(&c.operators_file, KEY).map_err(|e| ConsoleError(e.0))?;
        }
        engine.metrics.init_console();
        Ok(Console {
            engine,
            assets: Assets::of(config),
            operators_file: c.operators_file.clone(),
            trusted_header: c.trusted_header.clone(),
            trusted_proxies: c.trusted_proxies.clone(),
            auth: Auth::default(),
            plots: plot::Plots::default(),
            secure: !listen.ip().is_loopback(),
            config: config.clone(),
        })
    }

    /// The operators as the file says now.
    fn operators(&self) -> Result<Operators, ConsoleError> {
        Operators::load(&self.operators_file, KEY).map_err(|e| ConsoleError(e.0))
    }

    /// The `Set-Cookie` value of `name` = `value` for the console's paths.
    fn cookie(&self, name: &str, value: &str, max_age: Option<u64>) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        let age = max_age
            .map(|s| format!("; Max-Age={s}"))
            .unwrap_or_default();
        HeaderValue::from_str(&format!(
            "{name}={value}; Path=/console; HttpOnly; SameSite=Strict{secure}{age}"
        ))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// Who sent `parts`: the trusted proxy's header, else the session cookie's operator.
    fn who(&self, parts: &Parts) -> Option<Who> {
        if let Some(h) = &self.trusted_header {
            let peer = parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip());
            if peer.is_some_and(|p| self.trusted_proxies.contains(&p)) {
                let name = parts.headers.get(h.as_str()).and_then(|v| v.to_str().ok());
                if let Some(name) = name.filter(|n| operators::check_name(n).is_ok()) {
                    return Some(self.auth.proxied(name));
                }
            }
        }
        let t = auth::cookie(&parts.headers, auth::COOKIE)?;
        self.auth.session(t, Instant::now())
    }
}

/// A request from no operator: a page is sent to the login, a form refused (403).
pub struct NoOperator(Method);

impl IntoResponse for NoOperator {
    fn into_response(self) -> Response {
        match self.0 {
            Method::GET | Method::HEAD => Redirect::to("/console/login").into_response(),
            _ => view::refusal(
                StatusCode::FORBIDDEN,
                "Not logged in",
                "Log in first; nothing was changed.",
            ),
        }
    }
}

impl FromRequestParts<Arc<Console>> for Who {
    type Rejection = NoOperator;

    async fn from_request_parts(
        parts: &mut Parts,
        console: &Arc<Console>,
    ) -> Result<Self, Self::Rejection> {
        console
            .who(parts)
            .ok_or_else(|| NoOperator(parts.method.clone()))
    }
}

/// The console's routes, under `/console`. The overview's plots of the closed days are read
/// at once, in the background, so that the first overview does not wait for them.
pub fn router(console: Arc<Console>) -> Router {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        let c = console.clone();
        rt.spawn(async move {
            if let Err(e) = c.plots.warm(&c.engine.store, jiff::Timestamp::now()).await {
                let e = c.engine.redact(&e);
                tracing::warn!(error = %e, "The console could not read its plots yet; the overview will try again.");
            }
        });
    }
    Router::new()
        .route("/console", get(pages::overview))
        .route("/console/style.css", get(view::stylesheet))
        .route("/console/login", get(pages::login_form).post(pages::login))
        .route("/console/logout", post(pages::logout))
        .route("/console/exceptions", get(pages::exceptions))
        .route("/console/exceptions/{id}", get(pages::exception))
        .route("/console/exceptions/{id}/decide", post(pages::decide))
        .route("/console/orders/{order_ref}", get(story::order))
        .route("/console/events", get(story::events))
        .route("/console/events/replay", post(story::replay))
        .route("/console/runs", get(story::runs))
        .route("/console/balances", get(story::balances))
        .route("/console/{*rest}", get(pages::not_found))
        .layer(DefaultBodyLimit::max(MAX_FORM))
        .layer(axum::middleware::from_fn_with_state(console.clone(), guard))
        .with_state(console)
}

/// The Content-Security-Policy of every answer: nothing but this origin's stylesheet and
/// forms; no script, no frame, no plugin.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

/// Every answer: the security headers, and counted by its route's pattern (never the path,
/// which holds an id or a search) and status.
async fn guard(
    axum::extract::State(console): axum::extract::State<Arc<Console>>,
    req: Request,
    next: Next,
) -> Response {
    let route = match req.extensions().get::<MatchedPath>() {
        Some(p) => format!("{} {}", req.method(), p.as_str()),
        None => format!("{} other", req.method()),
    };
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    console
        .engine
        .metrics
        .console_request(&route, resp.status().as_u16());
    resp
}
