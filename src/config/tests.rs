use std::time::Duration;

use super::*;
use crate::chain::Finality;
use crate::domain::ChainKind;

const BASE: &str = r#"
[database]
url = "sqlite://x.db"

[chains.ethereum]
rpc_url = "http://127.0.0.1:8545"

[assets."ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7"]
symbol = "USDT"
decimals = 6

[providers.cg]
kind = "chaingateway"
api_key = "k-123456"
chains = ["ethereum"]
"#;

fn load(text: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_toml(
        text,
        env.iter().map(|(a, b)| (a.to_string(), b.to_string())),
    )
}

fn error_of(text: &str, env: &[(&str, &str)]) -> String {
    match load(text, env) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn defaults_fill_in_everything_not_given() {
    let c = load(BASE, &[]).unwrap();
    assert_eq!(c.schedule.cron, "0 */5 * * * *");
    assert_eq!(c.schedule.lookback, Duration::from_secs(48 * 3600));
    assert_eq!(c.listen.to_string(), "127.0.0.1:9187");
    assert_eq!(c.reconcile.resend_cooldown, Duration::from_secs(3600));
    let eth = c.chain("ethereum").unwrap();
    assert_eq!(
        (eth.confirmations, eth.final_depth, eth.finality),
        (12, 64, Finality::Finalized)
    );
    let ProviderKind::Chaingateway(cg) = &c.providers[0].kind else {
        panic!("not chaingateway")
    };
    assert_eq!(cg.base_url, "https://api.chaingateway.io/api/v2");
    assert_eq!(cg.network, "mainnet");
    assert_eq!(
        cg.decimals
            .get("ethereum:0xdac17f958d2ee523a2206206994597c13d831ec7"),
        Some(&6)
    );
}

#[test]
fn env_overrides_any_key() {
    let c = load(
        BASE,
        &[
            ("PAYRECON_DATABASE__URL", "postgres://u:pw@h/db"),
            ("PAYRECON_PROVIDERS__CG__API_KEY", "from-env"),
            ("PAYRECON_DATABASE__MAX_CONNECTIONS", "3"),
            ("PAYRECON_SCHEDULE__LOOKBACK", "7d"),
            ("PAYRECON_CONFIG", "ignored.toml"),
            ("PAYRECON_TEST_STRICT", "1"),
        ],
    )
    .unwrap();
    assert_eq!(c.database.url.expose(), "postgres://u:pw@h/db");
    assert_eq!(c.database.max_connections, 3);
    assert_eq!(c.schedule.lookback, Duration::from_secs(7 * 86400));
    let ProviderKind::Chaingateway(cg) = &c.providers[0].kind else {
        panic!("not chaingateway")
    };
    assert_eq!(cg.api_key.expose(), "from-env");
}

#[test]
fn secrets_come_from_files_with_the_newline_stripped() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("key");
    std::fs::write(&f, "file-key\n").unwrap();
    let text = BASE.replace(
        "api_key = \"k-123456\"",
        &format!("api_key_file = {:?}", f.display().to_string()),
    );
    let c = load(&text, &[]).unwrap();
    let ProviderKind::Chaingateway(cg) = &c.providers[0].kind else {
        panic!("not chaingateway")
    };
    assert_eq!(cg.api_key.expose(), "file-key");
    let missing = BASE.replace(
        "api_key = \"k-123456\"",
        "api_key_file = \"/nonexistent/k\"",
    );
    assert!(error_of(&missing, &[]).contains("providers.cg.api_key_file"));
}

#[test]
fn errors_name_the_key() {
    let unknown = format!("{BASE}\n[reconcile]\naply = true\n");
    let e = error_of(&unknown, &[]);
    assert!(e.contains("reconcile") && e.contains("aply"), "{e}");
    assert!(e.contains("line"), "{e}");

    let bad_duration = format!("{BASE}\n[schedule]\nlookback = \"48 hours\"\n");
    let e = error_of(&bad_duration, &[]);
    assert!(e.contains("schedule.lookback"), "{e}");

    let no_chain = BASE.replace(
        "chains = [\"ethereum\"]",
        "chains = [\"ethereum\", \"polygon\"]",
    );
    let e = error_of(&no_chain, &[]);
    assert!(
        e.contains("providers.cg.chains") && e.contains("polygon"),
        "{e}"
    );

    let e = error_of(BASE, &[("PAYRECON_DATABASE__MAX_CONNECTIONZ", "3")]);
    assert!(e.contains("max_connectionz"), "{e}");

    let e = error_of(
        &BASE.replace("kind = \"chaingateway\"", "kind = \"stripe\""),
        &[],
    );
    assert!(e.contains("providers.cg.kind"), "{e}");

    let e = error_of(
        &format!("{BASE}\n[schedule]\ncron = \"every minute\"\n"),
        &[],
    );
    assert!(e.contains("schedule.cron"), "{e}");

    let e = error_of(
        &BASE.replace("rpc_url = \"http://127.0.0.1:8545\"", ""),
        &[],
    );
    assert!(e.contains("chains.ethereum.rpc_url"), "{e}");

    let e = error_of(
        &BASE.replace("url = \"sqlite://x.db\"", "max_connections = \"many\""),
        &[],
    );
    assert!(e.contains("database.max_connections"), "{e}");
}

#[test]
fn errors_do_not_echo_secrets() {
    let text = BASE.replace("kind = \"chaingateway\"", "kind = \"nope\"");
    let e = error_of(&text, &[]);
    assert!(!e.contains("k-123456"), "{e}");
}

#[test]
fn shipped_config_toml_is_valid() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml")).unwrap();
    let c = load(&text, &[("PAYRECON_PROVIDERS__CG__API_KEY", "x")]).unwrap();
    assert!(!c.providers.is_empty());
}

#[test]
fn rpc_urls_chain_id_and_rate_limit_are_read() {
    let text = BASE.replace(
        "rpc_url = \"http://127.0.0.1:8545\"",
        "rpc_urls = [\"http://a:8545\", \"https://u:pw@b/v3/key\"]\nchain_id = 137\nmax_requests_per_second = 25",
    );
    let c = load(&text, &[]).unwrap();
    let eth = c.chain("ethereum").unwrap();
    assert_eq!(eth.rpc_urls, ["http://a:8545", "https://u:pw@b/v3/key"]);
    assert_eq!(eth.chain_id, Some(137));
    assert_eq!(eth.max_requests_per_second, Some(25));

    // rpc_url alone: one URL, no chain id, no limit.
    let c = load(BASE, &[]).unwrap();
    let eth = c.chain("ethereum").unwrap();
    assert_eq!(eth.rpc_urls, ["http://127.0.0.1:8545"]);
    assert_eq!((eth.chain_id, eth.max_requests_per_second), (None, None));

    // From the environment, as a TOML array.
    let c = load(
        BASE,
        &[
            ("PAYRECON_CHAINS__ETHEREUM__RPC_URL", ""),
            ("PAYRECON_CHAINS__ETHEREUM__CHAIN_ID", "1"),
        ],
    );
    assert!(c.is_err(), "an empty rpc_url is not a URL");
    let text = BASE.replace("rpc_url = \"http://127.0.0.1:8545\"", "");
    let c = load(
        &text,
        &[(
            "PAYRECON_CHAINS__ETHEREUM__RPC_URLS",
            "[\"http://x:1\", \"http://y:2\"]",
        )],
    )
    .unwrap();
    assert_eq!(c.chains[0].rpc_urls.len(), 2);
}

#[test]
fn rpc_url_and_rpc_urls_exclude_each_other_and_errors_name_the_key() {
    let both = BASE.replace(
        "rpc_url = \"http://127.0.0.1:8545\"",
        "rpc_url = \"http://a:1\"\nrpc_urls = [\"http://b:1\"]",
    );
    let e = error_of(&both, &[]);
    assert!(
        e.contains("chains.ethereum.rpc_urls") && e.contains("not both"),
        "{e}"
    );

    let empty = BASE.replace("rpc_url = \"http://127.0.0.1:8545\"", "rpc_urls = []");
    let e = error_of(&empty, &[]);
    assert!(e.contains("chains.ethereum.rpc_urls"), "{e}");

    let bad = BASE.replace(
        "rpc_url = \"http://127.0.0.1:8545\"",
        "rpc_urls = [\"http://a:1\", \"ws://u:secretpw@b/v3/key\"]",
    );
    let e = error_of(&bad, &[]);
    assert!(e.contains("chains.ethereum.rpc_urls[1]"), "{e}");
    assert!(!e.contains("secretpw") && !e.contains("key"), "{e}");

    let zero = BASE.replace(
        "rpc_url = \"http://127.0.0.1:8545\"",
        "rpc_url = \"http://127.0.0.1:8545\"\nmax_requests_per_second = 0",
    );
    let e = error_of(&zero, &[]);
    assert!(e.contains("chains.ethereum.max_requests_per_second"), "{e}");

    let typo = BASE.replace(
        "rpc_url = \"http://127.0.0.1:8545\"",
        "rpc_url = \"http://127.0.0.1:8545\"\nchain_id = \"one\"",
    );
    let e = error_of(&typo, &[]);
    assert!(e.contains("chains.ethereum.chain_id"), "{e}");
}

mod amounts;
mod shipped;

#[test]
fn balances_default_and_their_keys_are_validated_by_name() {
    let c = load(BASE, &[]).unwrap();
    assert_eq!(c.balances.cron, "0 30 3 * * *");
    assert_eq!(c.balances.lookback, Duration::from_secs(30 * 24 * 3600));
    assert_eq!(c.balances.treasury["ethereum"], Vec::<String>::new());
    let with = |extra: &str, chain: &str| {
        BASE.replace(
            "[chains.ethereum]\n",
            &format!("{extra}\n[chains.ethereum]\n{chain}\n"),
        )
    };
    let c = load(
        &with(
            "[balances]\ncron = \"\"\nlookback = \"7d\"",
            "treasury = [\"0x52908400098527886E0F7030069857D2E4169EE7\"]",
        ),
        &[],
    )
    .unwrap();
    assert_eq!(c.balances.cron, "", "off");
    assert_eq!(c.balances.lookback, Duration::from_secs(7 * 24 * 3600));
    assert_eq!(
        c.balances.treasury["ethereum"],
        ["0x52908400098527886e0f7030069857d2e4169ee7"],
        "the ledger's spelling"
    );
    let e = error_of(&with("[balances]\ncron = \"every day\"", ""), &[]);
    assert!(e.starts_with("config: balances.cron: "), "{e}");
    let e = error_of(&with("[balances]\nlookback = \"a month\"", ""), &[]);
    assert!(e.contains("balances.lookback"), "{e}");
    let e = error_of(&with("", "treasury = [\"TXYZ\"]"), &[]);
    assert!(
        e.starts_with("config: chains.ethereum.treasury: \"TXYZ\" is not an address"),
        "{e}"
    );
    let e = error_of(&with("[balances]\ncron_typo = \"x\"", ""), &[]);
    assert!(e.contains("cron_typo"), "{e}");
}
