//! Risks: what could go wrong, how likely, how bad, and what is done about it.

use serde::Deserialize;

use crate::validation::{ValidationErrors, map_nullable, map_present, required, set, text};
use crate::{Department, Impact, Likelihood, MemberId, OrganizationId, RiskId, Timestamp, nullable, required_non_null};

crate::string_enum! {
    /// What kind of risk it is.
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
    /// Where the risk stands.
    RiskStatus { Open = "open", Pending = "pending", Closed = "closed", Archived = "archived" }
}

crate::string_enum! {
    /// How the organization treats the risk.
    TreatmentStrategy { Accept = "accept", Avoid = "avoid", Mitigate = "mitigate", Transfer = "transfer" }
}

/// The longest title, in characters.
pub const TITLE_MAX: usize = 255;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 10_000;

/// A risk: what could go wrong, how likely and bad it is before and after treatment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Risk {
    /// The risk's id.
    pub id: RiskId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// 1 to [`TITLE_MAX`] characters.
    pub title: String,
    /// 1 to [`DESCRIPTION_MAX`] characters.
    pub description: String,
    /// What kind of risk.
    pub category: RiskCategory,
    /// The department it concerns, if any.
    pub department: Option<Department>,
    /// Where it stands.
    pub status: RiskStatus,
    /// How likely it is before treatment.
    pub likelihood: Likelihood,
    /// How bad it would be before treatment.
    pub impact: Impact,
    /// How likely it is after treatment.
    pub residual_likelihood: Likelihood,
    /// How bad it would be after treatment.
    pub residual_impact: Impact,
    /// How the treatment is carried out, if written down.
    pub treatment_strategy_description: Option<String>,
    /// How the risk is treated.
    pub treatment_strategy: TreatmentStrategy,
    /// The member responsible for it, if any.
    pub assignee_id: Option<MemberId>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// The body of a create. Omitted enumerations take the specification's defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewRisk {
    /// Required: 1 to 255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::title, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    /// Required: 1 to 10,000 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// Required.
    #[cfg_attr(feature = "openapi", schema(value_type = RiskCategory, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub category: Option<RiskCategory>,
    /// The department it concerns.
    pub department: Option<Department>,
    /// `open` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = RiskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<RiskStatus>,
    /// Before treatment; `very_unlikely` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub likelihood: Option<Likelihood>,
    /// Before treatment; `insignificant` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub impact: Option<Impact>,
    /// After treatment; `very_unlikely` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_likelihood: Option<Likelihood>,
    /// After treatment; `insignificant` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_impact: Option<Impact>,
    /// How the treatment is carried out.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::treatment_description))]
    pub treatment_strategy_description: Option<String>,
    /// `accept` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = TreatmentStrategy))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub treatment_strategy: Option<TreatmentStrategy>,
    /// The member responsible for it: an active member of the organization.
    pub assignee_id: Option<MemberId>,
}

/// The body of a PATCH: only present fields change; `null` clears a nullable field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RiskChanges {
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::title))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = RiskCategory))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub category: Option<RiskCategory>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub department: Option<Option<Department>>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = RiskStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<RiskStatus>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub likelihood: Option<Likelihood>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub impact: Option<Impact>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_likelihood: Option<Likelihood>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_impact: Option<Impact>,
    /// Absent: unchanged; `null`: cleared.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::treatment_description))]
    #[serde(default, deserialize_with = "nullable")]
    pub treatment_strategy_description: Option<Option<String>>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = TreatmentStrategy))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub treatment_strategy: Option<TreatmentStrategy>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub assignee_id: Option<Option<MemberId>>,
}

/// Validated changes to a risk.
#[derive(Debug, Clone)]
pub struct RiskPatch(RiskChanges);

impl RiskPatch {
    /// Validates `changes`; the first wrong field is the error.
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

    /// Whether no field is to change.
    pub fn is_empty(&self) -> bool {
        self.0 == RiskChanges::default()
    }

    /// The member the patch assigns, if it assigns one.
    pub fn assignee(&self) -> Option<&MemberId> {
        self.0.assignee_id.as_ref().and_then(Option::as_ref)
    }
}

impl Risk {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

impl Risk {
    /// A new risk of the organization, validated, with the defaults filled in.
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

/// The schemas of this module's inputs, as the validation checks them.
#[cfg(feature = "openapi")]
mod schemas {
    crate::openapi::text_fields! {
        title = text(1, super::TITLE_MAX);
        description = text(1, super::DESCRIPTION_MAX);
        treatment_description = nullable_text(0, super::DESCRIPTION_MAX);
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
