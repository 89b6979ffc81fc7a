//! The control library the service ships (library/README.md): its OSCAL component-definition,
//! read back by compliance-trestle (NIST-model bindings from PyPI, independent of our code).

use std::collections::BTreeSet;

use serde_json::json;

use crate::framework_status::trestle;
use crate::harness::TestServer;

api_tests!(the_library_exports_as_an_oscal_component_definition);

async fn the_library_exports_as_an_oscal_component_definition(server: &TestServer) {
    let tenant = server.tenant().await;
    let document = tenant.api.get("/v1/library/component-definition").await.ok(200);
    let read = trestle("check_component_definition.py", &document);
    let components = read["components"].as_array().unwrap();
    assert!(components.len() >= 80, "{} components", components.len());
    let mfa = components.iter().find(|c| c["props"]["library-id"] == "LIB-AC-01").unwrap();
    assert_eq!(mfa["type"], "process-procedure");
    assert_eq!(mfa["props"]["category"], "access");
    let sources: Vec<&str> =
        mfa["implementations"].as_array().unwrap().iter().map(|i| i["source"].as_str().unwrap()).collect();
    assert!(
        sources.iter().all(|s| s.ends_with("/v1/framework-templates/soc2-2017")
            || s.ends_with("/v1/framework-templates/iso27001-2022")),
        "{sources:?}"
    );

    // Every requirement of the shipped SOC 2 template is implemented by some component.
    let soc2 = tenant.api.post("/v1/framework-templates/soc2-2017/adopt", json!({})).await.ok(201);
    let implemented: BTreeSet<&str> = components
        .iter()
        .flat_map(|c| c["implementations"].as_array().unwrap())
        .filter(|i| i["source"].as_str().unwrap().ends_with("soc2-2017"))
        .flat_map(|i| i["controlIds"].as_array().unwrap().iter().map(|id| id.as_str().unwrap()))
        .collect();
    let requirements = soc2["requirements"].as_array().unwrap();
    assert!(!requirements.is_empty(), "{soc2}");
    for requirement in requirements {
        let identifier = requirement["identifier"].as_str().unwrap();
        assert!(implemented.contains(identifier), "no component implements {identifier}");
    }
}
