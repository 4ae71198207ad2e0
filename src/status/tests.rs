use super::provider_error;

#[test]
fn a_providers_part_of_the_run_error() {
    let all = ["cg", "qvard", "chain", "cg2"];
    let check = |error: &str, name: &str, want: Option<&str>| {
        assert_eq!(
            provider_error(error, name, &all).as_deref(),
            want,
            "{error} / {name}"
        )
    };
    check("cg: down; qvard: 401", "cg", Some("down"));
    check("cg: down; qvard: 401", "qvard", Some("401"));
    check("cg: down; qvard: 401", "chain", None);
    check("cg: a; b; chain: c", "cg", Some("a; b"));
    check("cg2: x", "cg", None);
    check("qvard: chain ethereum: timeout", "chain", None);
    check(
        "qvard: chain ethereum: timeout",
        "qvard",
        Some("chain ethereum: timeout"),
    );
    check("", "cg", None);
}
