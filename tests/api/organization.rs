//! `/v1/organization`: the caller's own organization and its settings.

use serde_json::{Value, json};

use crate::checks::{assert_acting_user, assert_id, assert_lacks, assert_only_changed, assert_timestamp, without};
use crate::harness::TestServer;

api_tests!(
    get_returns_the_callers_organization,
    update_sets_the_given_fields,
    slug_of_another_organization_is_409,
    invalid_fields_are_400_naming_the_field,
    the_operators_fields_are_only_read,
);

const ENVELOPE: [&str; 2] = ["authType", "authenticatedUser"];
const PATH: &str = "/v1/organization";

async fn get_returns_the_callers_organization(server: &TestServer) {
    let tenant = server.tenant().await;
    let org = tenant.api.get(PATH).await.ok(200);
    assert_id(&org["id"], "org_");
    assert_eq!(org["id"], tenant.org_id.as_str());
    assert_eq!(org, tenant.org, "the API and the CLI show the same organization");
    for key in ["logo", "metadata", "website", "deviceManagerLabelId", "primaryColor"] {
        assert_eq!(org[key], Value::Null, "{key} in {org}");
    }
    for key in ["onboardingCompleted", "hasAccess", "isDeviceManagerSetupCompleted"] {
        assert!(org[key].is_boolean(), "{key} in {org}");
    }
    assert!(org["name"].is_string() && org["slug"].is_string(), "{org}");
    assert_timestamp(&org["createdAt"]);
    assert_lacks(&org, &ENVELOPE);
    assert_eq!(tenant.session.get(PATH).await.ok(200), org);
}

async fn update_sets_the_given_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let changes = json!({
        "name": "Acme Compliance",
        "slug": format!("{}-new", tenant.org["slug"].as_str().unwrap_or("acme")),
        "logo": "https://cdn.example.test/logo.png",
        "metadata": "{\"industry\":\"finance\",\"size\":[1,2]}",
        "website": "http://acme.example.test",
        "onboardingCompleted": true,
        "hasAccess": true,
        "deviceManagerLabelId": null,
        "isDeviceManagerSetupCompleted": true,
        "primaryColor": "#1a2b3c",
    });
    let updated = tenant.api.patch(PATH, changes.clone()).await.ok(200);
    for (key, value) in changes.as_object().into_iter().flatten() {
        assert_eq!(&updated[key], value, "{key} in {updated}");
    }
    assert_eq!(updated["id"], tenant.org_id.as_str());
    assert_eq!(updated["createdAt"], tenant.org["createdAt"]);
    assert_eq!(updated["authType"], "api-key");
    assert_lacks(&updated, &["authenticatedUser"]);
    assert_eq!(tenant.api.get(PATH).await.ok(200), without(&updated, &ENVELOPE));

    let renamed = tenant.session.patch(PATH, json!({"name": "Acme", "primaryColor": "#abc"})).await.ok(200);
    assert_only_changed(&updated, &renamed, &["name", "primaryColor"]);
    assert_eq!(renamed["authType"], "session");
    assert_acting_user(&renamed, &tenant.owner);

    let clear =
        json!({"logo": null, "metadata": null, "website": null, "deviceManagerLabelId": null, "primaryColor": null});
    let cleared = tenant.api.patch(PATH, clear.clone()).await.ok(200);
    for key in clear.as_object().into_iter().flatten().map(|(key, _)| key) {
        assert_eq!(cleared[key], Value::Null, "{key} in {cleared}");
    }
    assert_eq!(cleared["name"], "Acme");
}

async fn slug_of_another_organization_is_409(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    tenant.api.patch(PATH, json!({"slug": other.org["slug"]})).await.problem(409);
    assert_eq!(tenant.api.get(PATH).await.ok(200)["slug"], tenant.org["slug"]);
    // Keeping one's own slug is not a clash.
    let same = tenant.api.patch(PATH, json!({"slug": tenant.org["slug"]})).await.ok(200);
    assert_eq!(same["slug"], tenant.org["slug"]);
}

async fn invalid_fields_are_400_naming_the_field(server: &TestServer) {
    let tenant = server.tenant().await;
    let cases = [
        ("logo", json!("not a url")),
        ("logo", json!("ftp://cdn.example.test/logo.png")),
        ("website", json!("javascript:alert(1)")),
        ("website", json!("example.test")),
        ("primaryColor", json!("red")),
        ("primaryColor", json!("#12345")),
        ("primaryColor", json!("#ggg")),
        ("primaryColor", json!("123456")),
        ("metadata", json!("{not json")),
        ("metadata", json!({"industry": "finance"})),
        ("metadata", json!(format!("\"{}\"", "x".repeat(10_000)))),
        ("name", json!("n".repeat(256))),
        ("name", json!(null)),
        ("name", json!("")),
        ("slug", json!(null)),
        ("slug", json!("Not A Slug")),
        ("slug", json!("-edge-")),
        ("onboardingCompleted", json!(null)),
        ("hasAccess", json!("yes")),
        ("isDeviceManagerSetupCompleted", json!(1)),
        ("deviceManagerLabelId", json!(1.5)),
        ("deviceManagerLabelId", json!("3")),
        ("plan", json!("enterprise")),
    ];
    for (field, value) in cases {
        tenant.api.patch(PATH, json!({field: value})).await.invalid(field);
    }
    assert_eq!(tenant.api.get(PATH).await.ok(200), tenant.org, "failed updates change nothing");
}

/// `hasAccess` and `deviceManagerLabelId` are the operator's: a tenant may send back what it read,
/// never change them (403 naming the field), on its own or with other changes.
async fn the_operators_fields_are_only_read(server: &TestServer) {
    let tenant = server.tenant().await;
    for (field, value) in
        [("hasAccess", json!(false)), ("deviceManagerLabelId", json!(6)), ("deviceManagerLabelId", json!(77_777))]
    {
        for client in [&tenant.api, &tenant.session] {
            let refused = client.patch(PATH, json!({field: value, "name": "Renamed"})).await.problem(403);
            let detail = refused["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(field), "{refused}");
        }
    }
    assert_eq!(tenant.api.get(PATH).await.ok(200), tenant.org, "refused updates change nothing");
    let same = json!({"hasAccess": tenant.org["hasAccess"], "deviceManagerLabelId": null, "name": "Renamed"});
    let updated = tenant.api.patch(PATH, same).await.ok(200);
    assert_eq!(updated["name"], "Renamed");
    assert_eq!(updated["hasAccess"], true);
}
