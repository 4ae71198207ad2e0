//! `payrecon check`: the configuration, the database, every chain and every provider, a
//! line each; exit 1 when any failed.

use super::Exit;

use super::Outcome;
use crate::config::Config;

/// Runs `payrecon check`. An unreachable database is a FAILED line, and the chains and
/// providers are still checked.
pub async fn command(config: Config) -> Outcome {
    let mut tail = Vec::new();
    let events_ok = check_events(&config, &mut tail).await;
    let console_ok = check_console(&config, &mut tail);
    let (lines, ok) = crate::app::App::check_config(config).await?;
    for l in lines.iter().chain(&tail) {
        println!("{l}");
    }
    Ok(Exit::of(ok && events_ok && console_ok))
}

/// The `[events]` line of `check`: a warning (not a failure) when payrecon applies
/// transitions but tells no one; otherwise whether the endpoint answers HTTP at all (any
/// status: a receiver may refuse a bare HEAD), which is a failure when it does not.
async fn check_events(config: &Config, lines: &mut Vec<String>) -> bool {
    let Some(ev) = &config.events else {
        if config.reconcile.apply {
            lines.push(
                "WARN   events: reconcile.apply = true and no [events] url: the transitions \
                 payrecon applies reach no application (docs/configuration.md, \"Events to your application\")"
                    .into(),
            );
        }
        return true;
    };
    let shown = crate::secret::redact_url(&ev.url);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(ev.timeout)
        .build();
    let answer = match client {
        Ok(c) => c.head(&ev.url).send().await.map_err(|e| e.without_url()),
        Err(e) => Err(e),
    };
    match answer {
        Ok(resp) => {
            lines.push(format!(
                "ok     events endpoint {shown}: answers (HTTP {} to HEAD)",
                resp.status().as_u16()
            ));
            true
        }
        Err(e) => {
            let why = crate::secret::redact(&e.to_string(), &config.secrets());
            lines.push(format!("FAILED events endpoint {shown}: {why}"));
            false
        }
    }
}

/// The `[console]` line of `check` when the console is on: its operators file as `serve`
/// reads it at start.
fn check_console(config: &Config, lines: &mut Vec<String>) -> bool {
    let c = &config.console;
    if !c.enabled {
        return true;
    }
    if c.trusted_header.is_some() && !c.operators_file.exists() {
        lines.push("ok     console: operators named by the trusted proxies' header".into());
        return true;
    }
    match crate::console::operators::Operators::load(&c.operators_file, "console.operators_file") {
        Ok(ops) => {
            lines.push(format!(
                "ok     console: {} operator(s) in {}",
                ops.names().count(),
                c.operators_file.display()
            ));
            true
        }
        Err(e) => {
            lines.push(format!("FAILED console: {e}"));
            false
        }
    }
}
