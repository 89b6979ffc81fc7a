//! The control library (`crate::library`) as an OSCAL 1.1.2 **component-definition**: one
//! component per library control, of type `process-procedure` (a control is something people and
//! systems do), whose control implementations say, per framework template, which requirements
//! it implements.
//!
//! - A control implementation's `source` is the framework template it answers, by its API
//!   address (`{base}/v1/framework-templates/soc2-2017`): the templates have no OSCAL catalog of
//!   their own to point at. A requirement's `control-id` is its identifier (`CC6.1`, `A.5.15`),
//!   an OSCAL token as it is.
//! - The library id and version are the component's properties in this service's namespace
//!   (`{base}/v1/library`), as OSCAL asks of names it does not define.
//! - UUIDs are derived from the ids they name, so the same library exports the same document but
//!   for `last-modified`.

use serde_json::{Value, json};

use super::assessment_results::{OSCAL_VERSION, uuid};
use crate::Timestamp;
use crate::library::{ControlTemplate, Library};

/// The framework templates a library control may answer, with their names.
const FRAMEWORKS: [(&str, &str); 2] = [("soc2-2017", "SOC 2 (TSC 2017)"), ("iso27001-2022", "ISO/IEC 27001:2022")];

/// The document, as OSCAL's JSON format writes it: `{"component-definition": {…}}`.
pub fn document(library: &Library, generated_at: Timestamp, base_url: &str) -> Value {
    let base = base_url.trim_end_matches('/');
    let components: Vec<Value> = library.controls.values().map(|control| component(control, base)).collect();
    json!({"component-definition": {
        "uuid": uuid(&["component-definition", "library"]),
        "metadata": {
            "title": "Control library",
            "last-modified": generated_at.to_string(),
            "version": format!("{} controls", library.controls.len()),
            "oscal-version": OSCAL_VERSION,
            "remarks": "The controls this service ships for SOC 2 and ISO/IEC 27001:2022 programs, each with the requirements it implements.",
        },
        "components": components,
    }})
}

fn component(control: &ControlTemplate, base: &str) -> Value {
    let namespace = format!("{base}/v1/library");
    let implementations: Vec<Value> = FRAMEWORKS
        .iter()
        .filter_map(|(key, name)| {
            let requirements = control.requirements.get(*key).filter(|r| !r.is_empty())?;
            let implemented: Vec<Value> = requirements
                .iter()
                .map(|requirement| {
                    json!({
                        "uuid": uuid(&[&control.id, key, requirement]),
                        "control-id": requirement,
                        "description": control.description,
                    })
                })
                .collect();
            Some(json!({
                "uuid": uuid(&[&control.id, key]),
                "source": format!("{base}/v1/framework-templates/{key}"),
                "description": format!("The requirements of {name} that {} implements.", control.id),
                "implemented-requirements": implemented,
            }))
        })
        .collect();
    json!({
        "uuid": uuid(&[&control.id]),
        "type": "process-procedure",
        "title": control.name,
        "description": control.description,
        "purpose": control.objective,
        "props": [
            {"name": "library-id", "ns": namespace, "value": control.id},
            {"name": "library-version", "ns": namespace, "value": control.version.to_string()},
            {"name": "category", "ns": namespace, "value": control.category.as_str()},
        ],
        "control-implementations": implementations,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;
    use crate::library::library;

    #[test]
    fn every_control_is_a_component_implementing_its_requirements() {
        let at = Timestamp::parse("2026-12-07T00:00:00Z").unwrap();
        let document = document(library(), at, "https://compliance.example/");
        let components = document["component-definition"]["components"].as_array().unwrap();
        assert_eq!(components.len(), library().controls.len());
        let mfa = components.iter().find(|c| c["props"][0]["value"] == "LIB-AC-01").unwrap();
        let soc2 = &mfa["control-implementations"][0];
        assert_eq!(soc2["source"], "https://compliance.example/v1/framework-templates/soc2-2017");
        assert_eq!(soc2["implemented-requirements"][0]["control-id"], "CC6.1");
        assert_eq!(document, super::document(library(), at, "https://compliance.example"), "stable");
    }
}
