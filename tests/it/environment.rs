//! What did not run here: a test returns early where a service or tool it needs is missing
//! (its reason is in its own captured output). This test lists every such need once; nextest
//! prints its output at the end of the run (`.config/nextest.toml`), so a first
//! `cargo nextest run --cargo-profile bench` says what it left out and what would run it. Under
//! `PAYRECON_TEST_STRICT=1` a missing need fails it, as it fails the tests that need it.

use payrecon_testkit::env::{needs, strict, Need};

/// The report: the needs missing, each with what it leaves out and what would run it.
fn report(needs: &[Need]) -> String {
    let missing: Vec<&Need> = needs.iter().filter(|n| !n.found).collect();
    if missing.is_empty() {
        return format!(
            "every service and tool the tests use was found ({}): nothing was left out",
            needs.len()
        );
    }
    let mut out = format!(
        "{} of {} services and tools the tests use are missing here; what did not run:\n",
        missing.len(),
        needs.len()
    );
    for n in missing {
        out += &format!(
            "  - {}: {}\n      to run it: {}\n",
            n.what, n.skipped, n.how
        );
    }
    out + "PAYRECON_TEST_STRICT=1 makes each of these a failure (docs/testing.md)."
}

#[test]
fn what_did_not_run() {
    let needs = needs();
    let report = report(&needs);
    println!("{report}");
    assert!(
        !strict() || needs.iter().all(|n| n.found),
        "PAYRECON_TEST_STRICT=1 and {report}"
    );
}

#[test]
fn the_report_names_each_missing_need_and_what_would_run_it() {
    let all = needs();
    assert!(all.len() >= 10, "every need the tests probe: {all:?}");
    let mut some = all.clone();
    for n in &mut some {
        n.found = true;
    }
    assert!(report(&some).contains("nothing was left out"));
    some[0].found = false;
    let text = report(&some);
    assert!(
        text.contains(some[0].what) && text.contains(some[0].how),
        "{text}"
    );
    assert!(text.starts_with(&format!("1 of {}", some.len())), "{text}");
}
