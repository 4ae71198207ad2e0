use super::*;

#[test]
fn presets_are_toml_tables() {
    for name in PRESETS {
        let table: toml::Table = preset_toml(name).unwrap().parse().unwrap();
        assert!(table.contains_key("fields"), "{name}");
        assert_eq!(preset_webhook_scheme(name), Some(*name));
    }
    assert_eq!(preset_toml("stripe"), None);
    assert_eq!(preset_webhook_scheme("stripe"), None);
}
