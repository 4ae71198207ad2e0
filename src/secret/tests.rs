use super::*;

#[test]
fn secrets_do_not_print() {
    let s = Secret::new("sk_live_123456");
    assert_eq!(format!("{s:?} {s}"), "Secret(***) ***");
    assert_eq!(redact("bad key sk_live_123456!", &[&s]), "bad key ***!");
    assert_eq!(
        redact_url("postgres://u:pw@h:5432/db"),
        "postgres://u:***@h:5432/db"
    );
    assert_eq!(redact_url("sqlite://x.db"), "sqlite://x.db");
    assert_eq!(
        redact_url("postgres://u@h/db?sslmode=require&password=hunter2&Pwd=x9"),
        "postgres://u@h/db?sslmode=require&password=***&Pwd=***"
    );
}

/// A database URL in an error is shown whole but for its password, so that a typo in its
/// scheme, host, port or path can be seen; the password never is (docs/reference.md §2).
#[test]
fn a_database_url_is_masked_down_to_its_password() {
    let plain = Secret::new("sqlit://ledger.db");
    assert_eq!(
        redact("unsupported database URL sqlit://ledger.db", &[&plain]),
        "unsupported database URL sqlit://ledger.db"
    );
    let pw = Secret::new("postgres://app:s3cretpw@db.example:5433/ledger");
    let text = "connect to postgres://app:s3cretpw@db.example:5433/ledger: refused \
                    (password s3cretpw)";
    assert_eq!(
        redact(text, &[&pw]),
        "connect to postgres://app:***@db.example:5433/ledger: refused (password ***)"
    );
    let q = Secret::new("mysql://app@h/db?password=longpassword1");
    assert_eq!(
        redact("at mysql://app@h/db?password=longpassword1", &[&q]),
        "at mysql://app@h/db?password=***"
    );
}
