//! Who is at the console (docs/operations.md, "The operator console"): sessions after a login
//! (a random token in an `HttpOnly`, `SameSite=Strict` cookie; 12 h idle expiry), the lock-out
//! after five failed logins for a name within a minute, and each session's CSRF token. Sessions
//! live in this process: a restart of `serve` logs everyone out. With `[console]
//! trusted_header`, a listed proxy names the operator instead, and the CSRF token is an HMAC of
//! the name under a key of this process.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// A session unused this long is gone.
pub const IDLE: Duration = Duration::from_secs(12 * 3600);
/// This many failed logins for a name within `LOCK_WINDOW` lock it for `LOCK_WINDOW`.
pub const LOCK_AFTER: usize = 5;
pub const LOCK_WINDOW: Duration = Duration::from_secs(60);
/// At most this many sessions are kept; the least recently used goes first.
const MAX_SESSIONS: usize = 10_000;

/// The session cookie, and the login form's own (double-submitted with its token).
pub const COOKIE: &str = "payrecon_console";
pub const LOGIN_COOKIE: &str = "payrecon_console_login";

/// The operator of a request and the CSRF token its forms must carry.
#[derive(Debug, Clone)]
pub struct Who {
    pub name: String,
    pub csrf: String,
}

struct Session {
    who: Who,
    last_seen: Instant,
}

#[derive(Default)]
struct Failures {
    recent: VecDeque<Instant>,
    locked_until: Option<Instant>,
}

pub struct Auth {
    sessions: Mutex<HashMap<String, Session>>,
    failures: Mutex<HashMap<String, Failures>>,
    key: [u8; 32],
}

impl Default for Auth {
    fn default() -> Self {
        let mut key = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        Auth {
            sessions: Mutex::default(),
            failures: Mutex::default(),
            key,
        }
    }
}

/// 32 random bytes, hex.
pub fn token() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

/// Whether two tokens are equal, in constant time.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

impl Auth {
    /// Whether `name` is locked out now.
    pub fn locked(&self, name: &str, now: Instant) -> bool {
        let f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        f.get(name)
            .and_then(|f| f.locked_until)
            .is_some_and(|until| now < until)
    }

    /// Records a failed login for `name`; whether it is locked now.
    pub fn failed(&self, name: &str, now: Instant) -> bool {
        let mut all = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        // Forget names whose failures are all older than the window (bounded memory).
        all.retain(|_, f| {
            f.locked_until.is_some_and(|u| now < u)
                || f.recent.back().is_some_and(|t| now - *t < LOCK_WINDOW)
        });
        let f = all.entry(name.to_string()).or_default();
        f.recent.push_back(now);
        while f.recent.front().is_some_and(|t| now - *t >= LOCK_WINDOW) {
            f.recent.pop_front();
        }
        if f.recent.len() >= LOCK_AFTER {
            f.recent.clear();
            f.locked_until = Some(now + LOCK_WINDOW);
        }
        f.locked_until.is_some_and(|u| now < u)
    }

    /// A successful login clears `name`'s failures.
    pub fn cleared(&self, name: &str) {
        let mut all = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        all.remove(name);
    }

    /// Opens a session for `name`: its cookie token.
    pub fn open(&self, name: &str, now: Instant) -> String {
        let t = token();
        let mut all = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|_, s| now - s.last_seen < IDLE);
        if all.len() >= MAX_SESSIONS {
            let oldest = all
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                all.remove(&k);
            }
        }
        let who = Who {
            name: name.to_string(),
            csrf: token(),
        };
        all.insert(
            t.clone(),
            Session {
                who,
                last_seen: now,
            },
        );
        t
    }

    /// The session of cookie token `t`, touched; `None` when unknown or idle too long.
    pub fn session(&self, t: &str, now: Instant) -> Option<Who> {
        let mut all = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let s = all.get_mut(t)?;
        if now - s.last_seen >= IDLE {
            all.remove(t);
            return None;
        }
        s.last_seen = now;
        Some(s.who.clone())
    }

    /// Logs the session of `t` out.
    pub fn close(&self, t: &str) {
        let mut all = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        all.remove(t);
    }

    /// The operator a trusted proxy named, with a CSRF token bound to the name.
    pub fn proxied(&self, name: &str) -> Who {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(b"payrecon console csrf\0");
        mac.update(name.as_bytes());
        Who {
            name: name.to_string(),
            csrf: hex::encode(mac.finalize().into_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_within_a_minute_lock_the_name_for_a_minute() {
        let a = Auth::default();
        let t0 = Instant::now();
        for i in 0..4 {
            assert!(!a.failed("ana", t0 + Duration::from_secs(i)));
        }
        assert!(!a.locked("ana", t0 + Duration::from_secs(5)));
        assert!(!a.locked("bo", t0));
        assert!(a.failed("ana", t0 + Duration::from_secs(10)));
        assert!(a.locked("ana", t0 + Duration::from_secs(69)));
        assert!(!a.locked("ana", t0 + Duration::from_secs(71)));
        // Failures spread over more than a minute never lock.
        for i in 0..10 {
            assert!(!a.failed("cy", t0 + Duration::from_secs(20 * i)));
        }
    }

    #[test]
    fn a_session_expires_when_idle_and_at_logout() {
        let a = Auth::default();
        let t0 = Instant::now();
        let t = a.open("ana", t0);
        let who = a.session(&t, t0 + IDLE / 2).unwrap();
        assert_eq!(who.name, "ana");
        assert_eq!(who.csrf.len(), 64);
        // Touched at IDLE / 2: alive until IDLE / 2 + IDLE.
        assert!(a.session(&t, t0 + IDLE + IDLE / 4).is_some());
        assert!(a.session(&t, t0 + 3 * IDLE).is_none());
        let t = a.open("ana", t0);
        a.close(&t);
        assert!(a.session(&t, t0).is_none());
        assert!(a.session("nonsense", t0).is_none());
        assert_eq!(a.proxied("ana").csrf, a.proxied("ana").csrf);
        assert_ne!(a.proxied("ana").csrf, a.proxied("bo").csrf);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
