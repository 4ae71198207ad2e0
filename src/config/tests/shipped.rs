//! The shipped config.toml's commented examples (chains, providers, events) parse, and the
//! keys they show are validated with errors that name the key, never a secret.

use super::*;

#[test]
fn shipped_config_toml_example_chains_are_valid() {
    // Uncomment the commented example chain tables (and the commented chain keys).
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml")).unwrap();
    let mut out = String::new();
    let mut in_examples = false;
    for line in text.lines() {
        if line.starts_with("# [chains.") {
            in_examples = true;
        }
        if line.starts_with("# Assets") || line.starts_with("[assets") {
            in_examples = false;
        }
        let uncommented = line.strip_prefix("# ").filter(|l| {
            in_examples || l.starts_with("chain_id =") || l.starts_with("max_requests_per_second =")
        });
        match uncommented {
            Some(l) if !l.starts_with(' ') => out.push_str(l.split(" #").next().unwrap()),
            Some(_) => {}
            None => out.push_str(line),
        }
        out.push('\n');
    }
    let c = load(&out, &[("PAYRECON_PROVIDERS__CG__API_KEY", "x")]).unwrap();
    let names: Vec<&str> = c.chains.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "arbitrum",
            "bitcoin",
            "bitcoin_own",
            "bsc",
            "ethereum",
            "legacy",
            "polygon",
            "solana",
            "tron",
            "tron_node"
        ]
    );
    let sol = c.chain("solana").unwrap();
    assert_eq!((sol.kind, sol.chain_id), (ChainKind::Solana, None));
    let usdc = &c.assets[&format!("solana:{USDC_SOL}")];
    assert_eq!((usdc.symbol.as_str(), usdc.decimals), ("USDC", 6));
    for name in ["bitcoin", "bitcoin_own"] {
        let b = c.chain(name).unwrap();
        assert!(matches!(b.kind, ChainKind::Bitcoin(_)), "{name}");
        assert_eq!((b.finality, b.final_depth), (Finality::Depth, 6), "{name}");
        assert!(b.rpc_urls.is_empty() && b.api_url.is_some(), "{name}");
    }
    for name in ["tron", "tron_node"] {
        let t = c.chain(name).unwrap();
        assert_eq!(
            (t.kind, t.chain_id),
            (ChainKind::Tron, Some(728_126_428)),
            "{name}"
        );
        assert!(t.api_url.is_some(), "{name}");
    }
    let eth = c.chain("ethereum").unwrap();
    assert_eq!(
        (eth.chain_id, eth.max_requests_per_second),
        (Some(1), Some(25))
    );
    let legacy = c.chain("legacy").unwrap();
    assert_eq!((legacy.finality, legacy.final_depth), (Finality::Depth, 64));
    assert_eq!(c.chain("polygon").unwrap().rpc_urls.len(), 2);
    for name in ["polygon", "bsc", "arbitrum"] {
        assert_eq!(
            c.chain(name).unwrap().finality,
            Finality::Finalized,
            "{name}"
        );
    }
}

#[test]
fn an_http_provider_from_a_preset_with_its_webhook_and_retry_window() {
    let text = format!(
        "{BASE}\n[providers.qvard]\nkind = \"http\"\npreset = \"qvard\"\n\
         base_url = \"https://api.qvard.example\"\napi_key = \"qv-key-1\"\n\
         webhook_secret = \"qv-hook-secret\"\nchains = [\"ethereum\"]\n\
         \n[providers.paymos]\nkind = \"http\"\npreset = \"paymos\"\n\
         base_url = \"https://api.paymos.example\"\nchains = [\"ethereum\"]\n"
    );
    let c = load(&text, &[]).unwrap();
    let q = c.providers.iter().find(|p| p.name() == "qvard").unwrap();
    assert_eq!(q.kind(), "http");
    assert_eq!(q.retry_window, Duration::from_secs(360));
    let w = q.webhook.as_ref().unwrap();
    assert_eq!(w.scheme, "qvard");
    let secrets: Vec<&str> = c.secrets().iter().map(|s| s.expose()).collect();
    assert!(secrets.contains(&"qv-hook-secret") && secrets.contains(&"qv-key-1"));
    let p = c.providers.iter().find(|p| p.name() == "paymos").unwrap();
    assert_eq!(p.retry_window, Duration::from_secs(16 * 3600));
    assert!(p.webhook.is_none(), "no secret: ingest not enabled");
    let cg = c.providers.iter().find(|p| p.name() == "cg").unwrap();
    assert_eq!(cg.retry_window, Duration::ZERO);
}

#[test]
fn webhook_and_http_provider_errors_name_the_key() {
    let http = |extra: &str| {
        format!(
            "{BASE}\n[providers.x]\nkind = \"http\"\npreset = \"qvard\"\n\
             base_url = \"https://q.example\"\nchains = [\"ethereum\"]\n{extra}"
        )
    };
    let e = error_of(&http("[providers.x.fields]\ntx_hsh = \"/t\"\n"), &[]);
    assert!(e.contains("providers.x.fields.tx_hsh"), "{e}");
    let e = error_of(
        &http("webhook_secret = \"s\"\nwebhook_secret_file = \"/f\"\n"),
        &[],
    );
    assert!(e.contains("providers.x.webhook_secret"), "{e}");
    let e = error_of(
        &http("webhook_secret = \"s\"\n[providers.x.webhook]\nscheme = \"rot13\"\n"),
        &[],
    );
    assert!(e.contains("providers.x.webhook.scheme"), "{e}");
    let generic = format!(
        "{BASE}\n[providers.g]\nkind = \"http\"\nbase_url = \"https://g.example\"\n\
         chains = [\"ethereum\"]\nwebhook_secret = \"s\"\nstatus_map = {{ paid = \"final\" }}\n\
         [providers.g.payments]\npath = \"/p?page={{page}}\"\npagination = \"page\"\nitems = \"/items\"\n\
         [providers.g.fields]\nevent_id = \"/id\"\nstatus = \"/status\"\nupdated_at = \"/at\"\norder_ref = \"/ref\"\n"
    );
    let e = error_of(&generic, &[]);
    assert!(e.contains("providers.g.webhook.header"), "{e}");
    let no_status = generic
        .replace("status = \"/status\"\n", "")
        .replace("webhook_secret = \"s\"\n", "");
    let e = error_of(&no_status, &[]);
    assert!(e.contains("providers.g.fields.status"), "{e}");
}

#[test]
fn shipped_config_toml_example_providers_are_valid() {
    // Uncomment the webhook keys of [providers.cg] and the commented provider tables, with
    // inline secrets instead of credential files.
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml")).unwrap();
    let mut out = String::new();
    let mut in_examples = false;
    for line in text.lines() {
        if line.starts_with("# webhook_secret = ") || line.starts_with("# [providers.") {
            in_examples = true;
        }
        let uncommented = line
            .strip_prefix("# ")
            .filter(|l| in_examples && !l.starts_with(' ') && !l.contains("\"cg_hook\""));
        match uncommented {
            Some(l) if l.starts_with("api_key_file") => out.push_str("api_key = \"k\""),
            Some(l) if l.starts_with("webhook_secret_file") => {
                out.push_str("webhook_secret = \"whsec\"")
            }
            Some(l) if l.starts_with("webhook_secret") => {
                out.push_str("webhook_secret = \"whsec\"")
            }
            Some(l) if is_toml_line(l) => out.push_str(l.split(" #").next().unwrap()),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    let c = load(&out, &[("PAYRECON_PROVIDERS__CG__API_KEY", "x")]).unwrap();
    let names: Vec<(&str, &str)> = c.providers.iter().map(|p| (p.name(), p.kind())).collect();
    assert_eq!(
        names,
        [
            ("acme", "http"),
            ("cg", "chaingateway"),
            ("paymos", "http"),
            ("qvard", "http")
        ]
    );
    for p in &c.providers {
        assert!(p.webhook.is_some(), "{} has a webhook", p.name());
    }
    let acme = c.providers.iter().find(|p| p.name() == "acme").unwrap();
    let w = acme.webhook.as_ref().unwrap();
    assert_eq!(w.header.as_deref(), Some("X-Acme-Signature"));
    assert_eq!(w.tolerance, Some(Duration::from_secs(300)));
}

/// `key = …` or `[table]`: a commented-out line of TOML, not prose.
fn is_toml_line(l: &str) -> bool {
    l.starts_with('[')
        || l.split_once(" = ").is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        })
}

#[test]
fn the_database_url_can_come_from_a_credential_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("db_url"),
        "postgres://app:s3cret-pw@db/ledger\n",
    )
    .unwrap();
    let text = BASE.replace("url = \"sqlite://x.db\"", "url_file = \"db_url\"");
    // A relative path is looked up in $CREDENTIALS_DIRECTORY (systemd's LoadCredential=).
    let prev = std::env::var_os("CREDENTIALS_DIRECTORY");
    std::env::set_var("CREDENTIALS_DIRECTORY", dir.path());
    let c = load(&text, &[]);
    match prev {
        Some(v) => std::env::set_var("CREDENTIALS_DIRECTORY", v),
        None => std::env::remove_var("CREDENTIALS_DIRECTORY"),
    }
    let c = c.unwrap();
    assert_eq!(
        c.database.url.expose(),
        "postgres://app:s3cret-pw@db/ledger"
    );
    assert!(c.secrets().iter().any(|s| s.expose().contains("s3cret-pw")));
    let missing = BASE.replace("url = \"sqlite://x.db\"", "url_file = \"/nonexistent/u\"");
    let e = error_of(&missing, &[]);
    assert!(e.contains("database.url_file"), "{e}");
}

const EVENTS_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[test]
fn shipped_config_toml_events_example_is_valid() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml")).unwrap();
    let c = load(&text, &[("PAYRECON_PROVIDERS__CG__API_KEY", "x")]).unwrap();
    assert!(c.events.is_none(), "no url: events are off");
    let on = text
        .replace(
            "# url = \"https://shop.example/payrecon/events\"",
            "url = \"https://shop.example/payrecon/events\"",
        )
        .replace(
            "# secret = \"whsec_...\"",
            &format!("secret = \"{EVENTS_SECRET}\""),
        );
    let c = load(&on, &[("PAYRECON_PROVIDERS__CG__API_KEY", "x")]).unwrap();
    let e = c.events.clone().expect("events on");
    assert_eq!(e.url, "https://shop.example/payrecon/events");
    assert_eq!(e.timeout, std::time::Duration::from_secs(15));
    assert_eq!(e.max_concurrency, 8);
    assert_eq!(e.retry_schedule.len(), 9);
    assert_eq!(e.retry_schedule[8], std::time::Duration::from_secs(86_400));
    assert_eq!(e.flush_timeout, std::time::Duration::from_secs(10));
    assert_eq!(e.retention, std::time::Duration::from_secs(30 * 86_400));
    assert_eq!(e.key().len(), 24);
    assert!(c.secrets().iter().any(|s| s.expose() == EVENTS_SECRET));
}

#[test]
fn events_keys_are_validated_and_errors_name_the_key_never_the_secret() {
    let with = |events: &str| format!("{BASE}\n[events]\n{events}\n");
    let url = "url = \"https://shop.example/e\"";
    for (events, key) in [
        (
            format!("{url}\nsecret = \"sk_not_whsec_value\""),
            "events.secret",
        ),
        (
            format!("{url}\nsecret = \"whsec_!!notbase64\""),
            "events.secret",
        ),
        // 8 bytes: too short.
        (
            format!("{url}\nsecret = \"whsec_c2hvcnRrZXk=\""),
            "events.secret",
        ),
        (url.to_string(), "events.secret"),
        (
            format!("url = \"ftp://shop.example/e\"\nsecret = \"{EVENTS_SECRET}\""),
            "events.url",
        ),
        (
            format!("url = \"not a url\"\nsecret = \"{EVENTS_SECRET}\""),
            "events.url",
        ),
        (
            format!("{url}\nsecret = \"{EVENTS_SECRET}\"\nmax_concurrency = 0"),
            "events.max_concurrency",
        ),
        (
            format!("{url}\nsecret = \"{EVENTS_SECRET}\"\nretry_schedule = [\"5s\", \"soon\"]"),
            "events.retry_schedule[1]",
        ),
        (
            format!("{url}\nsecret = \"{EVENTS_SECRET}\"\nsurprise = 1"),
            "events",
        ),
    ] {
        let e = error_of(&with(&events), &[]);
        assert!(e.contains(key), "{events}: {e}");
        assert!(
            !e.contains("sk_not_whsec_value") && !e.contains("MfKQ9r8G"),
            "{e}"
        );
    }
    // secret_file: read once, newline stripped.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("events_secret");
    std::fs::write(&f, format!("{EVENTS_SECRET}\n")).unwrap();
    let c = load(
        &with(&format!("{url}\nsecret_file = \"{}\"", f.display())),
        &[],
    )
    .unwrap();
    assert_eq!(c.events.unwrap().secret.expose(), EVENTS_SECRET);
    let e = error_of(
        &with(&format!(
            "{url}\nsecret = \"{EVENTS_SECRET}\"\nsecret_file = \"x\""
        )),
        &[],
    );
    assert!(e.contains("not both"), "{e}");
}

#[test]
fn the_api_is_off_without_a_token_and_a_bad_token_is_named_never_shown() {
    assert!(load(BASE, &[]).unwrap().api.is_none());
    let token = "tok-0123456789abcdef";
    let c = load(BASE, &[("PAYRECON_API__TOKEN", token)]).unwrap();
    assert_eq!(c.api.as_ref().unwrap().token.expose(), token);
    assert!(c.secrets().iter().any(|s| s.expose() == token));
    // The catalog: the configured chain, its [assets] token in any spelling.
    let cat = c.catalog();
    assert_eq!(cat.chain_names(), ["ethereum"]);
    let input = crate::domain::OrderInput {
        order_ref: "A",
        chain: "ethereum",
        pay_to: "0xdac17f958d2ee523a2206206994597c13d831ec7",
        asset: "0xDAC17F958D2EE523A2206206994597C13D831EC7",
        amount_due: "1",
        expires_at: None,
        reference: None,
    };
    assert!(crate::domain::expected_order(&input, &cat).is_ok());
    let short = error_of(&format!("{BASE}\n[api]\ntoken = \"short-secret\"\n"), &[]);
    assert!(short.contains("api.token: must be at least 16"), "{short}");
    assert!(!short.contains("short-secret"), "{short}");
    let spaced = error_of(
        &format!("{BASE}\n[api]\ntoken = \"has a space 0123456789\"\n"),
        &[],
    );
    assert!(spaced.contains("api.token: must be printable"), "{spaced}");
    let both = error_of(
        &format!("{BASE}\n[api]\ntoken = \"{token}\"\ntoken_file = \"/x\"\n"),
        &[],
    );
    assert!(both.contains("not both"), "{both}");
    let unknown = error_of(&format!("{BASE}\n[api]\ntokn = \"{token}\"\n"), &[]);
    assert!(
        unknown.contains("api") && unknown.contains("tokn"),
        "{unknown}"
    );
}

const USDC_SOL: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

/// A Solana chain's states are the cluster's commitment: the keys that set them elsewhere,
/// and `chain_id`, are refused naming the key; a mint that is not base58 of 32 bytes is refused
/// naming the asset.
#[test]
fn a_solana_chain_refuses_the_keys_its_commitment_replaces() {
    let base = "[chains.solana]\nkind = \"solana\"\nrpc_url = \"http://127.0.0.1:8899\"\n";
    let ok = load(base, &[]).unwrap();
    assert_eq!(ok.chain("solana").unwrap().kind, ChainKind::Solana);
    for (key, line) in [
        ("confirmations", "confirmations = 1"),
        ("finality", "finality = \"finalized\""),
        ("final_depth", "final_depth = 32"),
        ("chain_id", "chain_id = 101"),
    ] {
        let e = error_of(&format!("{base}{line}\n"), &[]);
        assert!(
            e.contains(&format!("chains.solana.{key}: does not apply")),
            "{key}: {e}"
        );
    }
    let bad_mint = format!("{base}[assets.\"solana:0xdac17f958d2ee523a2206206994597c13d831ec7\"]\nsymbol = \"X\"\ndecimals = 6\n");
    let e = error_of(&bad_mint, &[]);
    assert!(e.contains("assets.") && e.contains("base58"), "{e}");
}
