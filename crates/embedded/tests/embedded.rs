//! Runs the embedding example (crates/embedded/examples/embedded.rs) as part of the test suite, on a
//! fresh SQLite database, twice: the second run finds the organization the first made.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/embedded.rs"]
#[allow(dead_code)]
mod embedded;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedding_example_creates_lists_and_reads_validation_errors_without_http() {
    let dir =
        std::env::temp_dir().join(format!("compliance-embedded-test-{}-{}", std::process::id(), rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let first = embedded::run(&dir).await.unwrap();
    assert!(first.organization_id.starts_with("org_"), "{first:?}");
    assert_eq!(first.listed, ["Laptop theft"]);
    assert!(first.refused.iter().any(|error| error.starts_with("title:")), "{first:?}");

    let second = embedded::run(&dir).await.unwrap();
    assert_eq!(second.organization_id, first.organization_id, "the same organization, found by its slug");
    assert_eq!(second.listed, ["Laptop theft", "Laptop theft"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
