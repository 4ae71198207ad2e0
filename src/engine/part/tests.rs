use super::*;

#[test]
fn the_sweep_is_named_chain_as_spec_5_says() {
    assert_eq!(Part::Sweep.name(), "chain");
    assert_eq!(Part::Provider("cg").name(), "cg");
    assert_eq!(Part::Run.name(), "run");
}
