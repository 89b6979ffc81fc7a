//! `/v1/checks`: the catalog of checks the providers ship, its filters, an unknown parameter or
//! value refused by name, one check by id, and who reads it (the role walk in access.rs covers
//! every role and key scope).

use serde_json::Value;

use crate::checks::data;
use crate::harness::TestServer;

api_tests!(the_catalog_lists_filters_and_reads_one_check, bad_filters_are_400_naming_the_parameter);

fn ids(list: &Value) -> Vec<&str> {
    data(list).iter().map(|check| check["id"].as_str().unwrap()).collect()
}

async fn the_catalog_lists_filters_and_reads_one_check(server: &TestServer) {
    let tenant = server.tenant().await;
    let all = tenant.api.get("/v1/checks").await.ok(200);
    let every = ids(&all);
    assert_eq!(all["count"], every.len());
    assert!(every.len() >= 30, "{every:?}");
    assert!(every.windows(2).all(|pair| pair[0] < pair[1]), "sorted by id: {every:?}");
    for provider in ["aws", "github", "google-workspace", "fleetdm"] {
        assert!(every.iter().any(|id| id.starts_with(&format!("{provider}."))), "{provider}");
    }

    let aws_critical = tenant.api.get("/v1/checks?provider=aws&severity=critical").await.ok(200);
    let kept = data(&aws_critical);
    assert!(!kept.is_empty());
    assert!(kept.iter().all(|c| c["provider"] == "aws" && c["severity"] == "critical"), "{aws_critical}");
    assert!(ids(&aws_critical).contains(&"aws.iam.root-mfa"));

    // Repeating a parameter keeps any of its values.
    let two = tenant.api.get("/v1/checks?provider=github&provider=google-workspace").await.ok(200);
    assert!(data(&two).iter().all(|c| c["provider"] == "github" || c["provider"] == "google-workspace"));
    let expected = data(&all).iter().filter(|c| c["provider"] == "github" || c["provider"] == "google-workspace");
    assert_eq!(data(&two).len(), expected.count());
    assert_eq!(tenant.api.get("/v1/checks?provider=nobody").await.ok(200)["count"], 0);

    let check = tenant.api.get("/v1/checks/github.org.two-factor-required").await.ok(200);
    assert_eq!(check["provider"], "github");
    assert_eq!(check["severity"], "high");
    assert!(!check["reads"].as_array().unwrap().is_empty(), "{check}");
    assert!(check["requirements"]["soc2-2017"].as_array().unwrap().iter().any(|r| r == "CC6.1"), "{check}");
    assert_eq!(check["references"]["prowler"][0], "organization_members_mfa_required");
    tenant.api.get("/v1/checks/github.org.nothing").await.problem(404);
}

async fn bad_filters_are_400_naming_the_parameter(server: &TestServer) {
    let tenant = server.tenant().await;
    for (query, field) in
        [("severity=urgent", "severity"), ("sort=id", "sort"), ("provider=", "provider"), ("limit=5", "limit")]
    {
        let problem = tenant.api.get(&format!("/v1/checks?{query}")).await.problem(400);
        assert_eq!(problem["errors"][0]["field"], field, "{query}: {problem}");
    }
}
