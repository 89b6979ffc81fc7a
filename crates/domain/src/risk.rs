//! Risks: what could go wrong, how likely, how bad, and what is done about it.

use serde::Deserialize;

use crate::validation::{ValidationErrors, map_nullable, map_present, required, set, text};
use crate::{Department, Impact, Likelihood, MemberId, OrganizationId, RiskId, Timestamp, nullable, required_non_null};

crate::string_enum! {
    RiskCategory {
        Customer = "customer",
        Governance = "governance",
        Operations = "operations",
        Other = "other",
        People = "people",
        Regulatory = "regulatory",
        Reporting = "reporting",
        Resilience = "resilience",
        Technology = "technology",
        VendorManagement = "vendor_management",
    }
}

crate::string_enum! {
    RiskStatus { Open = "open", Pending = "pending", Closed = "closed", Archived = "archived" }
}

crate::string_enum! {
    TreatmentStrategy { Accept = "accept", Avoid = "avoid", Mitigate = "mitigate", Transfer = "transfer" }
}

pub const TITLE_MAX: usize = 255;
pub const DESCRIPTION_MAX: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Risk {
    pub id: RiskId,
    pub organization_id: OrganizationId,
    pub title: String,
    pub description: String,
    pub category: RiskCategory,
    pub department: Option<Department>,
    pub status: RiskStatus,
    pub likelihood: Likelihood,
    pub impact: Impact,
    pub residual_likelihood: Likelihood,
    pub residual_impact: Impact,
    pub treatment_strategy_description: Option<String>,
    pub treatment_strategy: TreatmentStrategy,
    pub assignee_id: Option<MemberId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// The body of a create. Omitted enumerations take the specification's defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewRisk {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::risk_title, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::risk_description, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = RiskCategory, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub category: Option<RiskCategory>,
    pub department: Option<Department>,
    #[cfg_attr(feature = "openapi", schema(value_type = RiskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<RiskStatus>,
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub likelihood: Option<Likelihood>,
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub impact: Option<Impact>,
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_likelihood: Option<Likelihood>,
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_impact: Option<Impact>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::risk_treatment_description))]
    pub treatment_strategy_description: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = TreatmentStrategy))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub treatment_strategy: Option<TreatmentStrategy>,
    pub assignee_id: Option<MemberId>,
}

/// The body of a PATCH: only present fields change; `null` clears a nullable field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RiskChanges {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::risk_title))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::risk_description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = RiskCategory))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub category: Option<RiskCategory>,
    #[serde(default, deserialize_with = "nullable")]
    pub department: Option<Option<Department>>,
    #[cfg_attr(feature = "openapi", schema(value_type = RiskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<RiskStatus>,
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub likelihood: Option<Likelihood>,
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub impact: Option<Impact>,
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_likelihood: Option<Likelihood>,
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_impact: Option<Impact>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::risk_treatment_description))]
    #[serde(default, deserialize_with = "nullable")]
    pub treatment_strategy_description: Option<Option<String>>,
    #[cfg_attr(feature = "openapi", schema(value_type = TreatmentStrategy))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub treatment_strategy: Option<TreatmentStrategy>,
    #[serde(default, deserialize_with = "nullable")]
    pub assignee_id: Option<Option<MemberId>>,
}

/// Validated changes to a risk.
#[derive(Debug, Clone)]
pub struct RiskPatch(RiskChanges);

impl RiskPatch {
    pub fn new(changes: RiskChanges) -> Result<Self, ValidationErrors> {
        Ok(Self(RiskChanges {
            title: map_present(changes.title, |t| text("title", t, 1, TITLE_MAX))?,
            description: map_present(changes.description, |d| text("description", d, 1, DESCRIPTION_MAX))?,
            treatment_strategy_description: map_nullable(changes.treatment_strategy_description, |d| {
                text("treatmentStrategyDescription", d, 0, DESCRIPTION_MAX)
            })?,
            ..changes
        }))
    }

    /// The validated changes, field by field (`None`: unchanged).
    pub fn changes(&self) -> &RiskChanges {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0 == RiskChanges::default()
    }

    /// The member the patch assigns, if it assigns one.
    pub fn assignee(&self) -> Option<&MemberId> {
        self.0.assignee_id.as_ref().and_then(Option::as_ref)
    }
}

impl Risk {
    pub fn create(organization_id: OrganizationId, input: NewRisk, now: Timestamp) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: RiskId::generate(),
            organization_id,
            title: text("title", required("title", input.title)?, 1, TITLE_MAX)?,
            description: text("description", required("description", input.description)?, 1, DESCRIPTION_MAX)?,
            category: required("category", input.category)?,
            department: input.department,
            status: input.status.unwrap_or(RiskStatus::Open),
            likelihood: input.likelihood.unwrap_or(Likelihood::VeryUnlikely),
            impact: input.impact.unwrap_or(Impact::Insignificant),
            residual_likelihood: input.residual_likelihood.unwrap_or(Likelihood::VeryUnlikely),
            residual_impact: input.residual_impact.unwrap_or(Impact::Insignificant),
            treatment_strategy_description: input
                .treatment_strategy_description
                .map(|d| text("treatmentStrategyDescription", d, 0, DESCRIPTION_MAX))
                .transpose()?,
            treatment_strategy: input.treatment_strategy.unwrap_or(TreatmentStrategy::Accept),
            assignee_id: input.assignee_id,
            created_at: now,
            updated_at: now,
        })
    }

    /// Applies a validated patch; an empty patch changes nothing, not even `updated_at`.
    pub fn apply(&mut self, patch: &RiskPatch, now: Timestamp) {
        if patch.is_empty() {
            return;
        }
        let c = &patch.0;
        set(&mut self.title, &c.title);
        set(&mut self.description, &c.description);
        set(&mut self.category, &c.category);
        set(&mut self.department, &c.department);
        set(&mut self.status, &c.status);
        set(&mut self.likelihood, &c.likelihood);
        set(&mut self.impact, &c.impact);
        set(&mut self.residual_likelihood, &c.residual_likelihood);
        set(&mut self.residual_impact, &c.residual_impact);
        set(&mut self.treatment_strategy_description, &c.treatment_strategy_description);
        set(&mut self.treatment_strategy, &c.treatment_strategy);
        set(&mut self.assignee_id, &c.assignee_id);
        self.updated_at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn risk() -> Risk {
        let input = NewRisk {
            title: Some("Phishing".into()),
            description: Some("Staff click links".into()),
            category: Some(RiskCategory::People),
            ..NewRisk::default()
        };
        Risk::create(OrganizationId::generate(), input, Timestamp::now()).unwrap()
    }

    #[test]
    fn create_applies_the_spec_defaults() {
        let risk = risk();
        assert_eq!(risk.status, RiskStatus::Open);
        assert_eq!(risk.likelihood, Likelihood::VeryUnlikely);
        assert_eq!(risk.residual_impact, Impact::Insignificant);
        assert_eq!(risk.treatment_strategy, TreatmentStrategy::Accept);
    }

    #[test]
    fn create_names_the_missing_field() {
        let error = Risk::create(OrganizationId::generate(), NewRisk::default(), Timestamp::now()).unwrap_err();
        assert_eq!(error.0[0].field, "title");
    }

    #[test]
    fn patch_changes_only_present_fields_and_null_clears() {
        let mut risk = risk();
        risk.department = Some(Department::It);
        let changes: RiskChanges = serde_json::from_str(r#"{"status":"closed","department":null}"#).unwrap();
        risk.apply(&RiskPatch::new(changes).unwrap(), Timestamp::now());
        assert_eq!(risk.status, RiskStatus::Closed);
        assert_eq!(risk.department, None);
        assert_eq!(risk.title, "Phishing");
    }

    #[test]
    fn null_for_a_non_nullable_field_is_refused() {
        let error = serde_json::from_str::<RiskChanges>(r#"{"title":null}"#).unwrap_err();
        assert!(error.to_string().contains("must not be null"));
    }

    #[test]
    fn empty_patch_keeps_updated_at() {
        let mut risk = risk();
        let before = risk.updated_at;
        risk.apply(&RiskPatch::new(RiskChanges::default()).unwrap(), Timestamp::now().plus(time::Duration::seconds(5)));
        assert_eq!(risk.updated_at, before);
    }
}
