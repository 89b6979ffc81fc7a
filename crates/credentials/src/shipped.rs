//! The manifests of `providers/`, compiled into the binary.

/// `(source name, JSON text)` of every file in the repository's `providers/` directory.
pub(crate) const SHIPPED: &[(&str, &str)] = &[
    ("providers/aws.json", include_str!("../../../providers/aws.json")),
    ("providers/bitbucket.json", include_str!("../../../providers/bitbucket.json")),
    ("providers/fleetdm.json", include_str!("../../../providers/fleetdm.json")),
    ("providers/github.json", include_str!("../../../providers/github.json")),
    ("providers/google-workspace.json", include_str!("../../../providers/google-workspace.json")),
    ("providers/rippling.json", include_str!("../../../providers/rippling.json")),
    ("providers/shodan.json", include_str!("../../../providers/shodan.json")),
    ("providers/vercel.json", include_str!("../../../providers/vercel.json")),
];

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use std::collections::BTreeSet;
    use std::path::Path;

    use super::SHIPPED;

    #[test]
    fn every_manifest_in_the_providers_directory_is_shipped_and_nothing_else() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../providers");
        let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".json"))
            .map(|name| format!("providers/{name}"))
            .collect();
        let shipped: BTreeSet<String> = SHIPPED.iter().map(|(source, _)| (*source).to_owned()).collect();
        assert_eq!(shipped.len(), SHIPPED.len(), "a manifest is listed twice");
        assert_eq!(on_disk, shipped, "providers/ and SHIPPED differ");
        for (source, text) in SHIPPED {
            let on_disk = std::fs::read_to_string(dir.join(source.trim_start_matches("providers/"))).unwrap();
            assert_eq!(&on_disk, text, "{source} is compiled from another file");
        }
    }
}
