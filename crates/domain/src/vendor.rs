//! Vendors: third parties the organization depends on, and the risk they carry.

use serde::Deserialize;

use crate::validation::{ValidationErrors, http_url, map_nullable, map_present, required, set, text};
use crate::{Impact, Likelihood, MemberId, OrganizationId, Timestamp, VendorId, nullable, required_non_null};

crate::string_enum! {
    /// What a vendor provides.
    VendorCategory {
        Cloud = "cloud",
        Infrastructure = "infrastructure",
        SoftwareAsAService = "software_as_a_service",
        Finance = "finance",
        Marketing = "marketing",
        Sales = "sales",
        Hr = "hr",
        Other = "other",
    }
}

crate::string_enum! {
    /// How far the vendor's assessment is.
    VendorStatus { NotAssessed = "not_assessed", InProgress = "in_progress", Assessed = "assessed" }
}

/// The longest name, in characters.
pub const NAME_MAX: usize = 255;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 10_000;

/// A vendor: a supplier the organization depends on, and its risk before and after controls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vendor {
    /// The vendor's id.
    pub id: VendorId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// 1 to [`NAME_MAX`] characters.
    pub name: String,
    /// 1 to [`DESCRIPTION_MAX`] characters.
    pub description: String,
    /// What it provides.
    pub category: VendorCategory,
    /// How far its assessment is.
    pub status: VendorStatus,
    /// How likely a problem with the vendor is before controls.
    pub inherent_probability: Likelihood,
    /// How bad a problem with the vendor would be before controls.
    pub inherent_impact: Impact,
    /// How likely a problem with the vendor is after controls.
    pub residual_probability: Likelihood,
    /// How bad a problem with the vendor would be after controls.
    pub residual_impact: Impact,
    /// Its website, an http(s) URL, if any.
    pub website: Option<String>,
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
pub struct NewVendor {
    /// Required: 1 to 255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Required: 1 to 10,000 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// `other` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = VendorCategory))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub category: Option<VendorCategory>,
    /// `not_assessed` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = VendorStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<VendorStatus>,
    /// Before controls; `very_unlikely` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub inherent_probability: Option<Likelihood>,
    /// Before controls; `insignificant` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub inherent_impact: Option<Impact>,
    /// After controls; `very_unlikely` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_probability: Option<Likelihood>,
    /// After treatment; `insignificant` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_impact: Option<Impact>,
    /// An http(s) URL.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::nullable_http_url))]
    pub website: Option<String>,
    /// The member responsible for it: an active member of the organization.
    pub assignee_id: Option<MemberId>,
}

/// The body of a PATCH: only present fields change; `null` clears a nullable field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VendorChanges {
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = VendorCategory))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub category: Option<VendorCategory>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = VendorStatus))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<VendorStatus>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub inherent_probability: Option<Likelihood>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub inherent_impact: Option<Impact>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Likelihood))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_probability: Option<Likelihood>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Impact))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub residual_impact: Option<Impact>,
    /// Absent: unchanged; `null`: cleared.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::nullable_http_url))]
    #[serde(default, deserialize_with = "nullable")]
    pub website: Option<Option<String>>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub assignee_id: Option<Option<MemberId>>,
}

/// Validated changes to a vendor.
#[derive(Debug, Clone)]
pub struct VendorPatch(VendorChanges);

impl VendorPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: VendorChanges) -> Result<Self, ValidationErrors> {
        Ok(Self(VendorChanges {
            name: map_present(changes.name, |n| text("name", n, 1, NAME_MAX))?,
            description: map_present(changes.description, |d| text("description", d, 1, DESCRIPTION_MAX))?,
            website: map_nullable(changes.website, |w| http_url("website", w))?,
            ..changes
        }))
    }

    /// The validated changes, field by field (`None`: unchanged).
    pub fn changes(&self) -> &VendorChanges {
        &self.0
    }

    /// Whether no field is to change.
    pub fn is_empty(&self) -> bool {
        self.0 == VendorChanges::default()
    }

    /// The member the patch assigns, if it assigns one.
    pub fn assignee(&self) -> Option<&MemberId> {
        self.0.assignee_id.as_ref().and_then(Option::as_ref)
    }
}

impl Vendor {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

impl Vendor {
    /// A new vendor of the organization, validated, with the defaults filled in.
    pub fn create(organization_id: OrganizationId, input: NewVendor, now: Timestamp) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: VendorId::generate(),
            organization_id,
            name: text("name", required("name", input.name)?, 1, NAME_MAX)?,
            description: text("description", required("description", input.description)?, 1, DESCRIPTION_MAX)?,
            category: input.category.unwrap_or(VendorCategory::Other),
            status: input.status.unwrap_or(VendorStatus::NotAssessed),
            inherent_probability: input.inherent_probability.unwrap_or(Likelihood::VeryUnlikely),
            inherent_impact: input.inherent_impact.unwrap_or(Impact::Insignificant),
            residual_probability: input.residual_probability.unwrap_or(Likelihood::VeryUnlikely),
            residual_impact: input.residual_impact.unwrap_or(Impact::Insignificant),
            website: input.website.map(|w| http_url("website", w)).transpose()?,
            assignee_id: input.assignee_id,
            created_at: now,
            updated_at: now,
        })
    }

    /// Applies a validated patch; an empty patch changes nothing, not even `updated_at`.
    pub fn apply(&mut self, patch: &VendorPatch, now: Timestamp) {
        if patch.is_empty() {
            return;
        }
        let c = &patch.0;
        set(&mut self.name, &c.name);
        set(&mut self.description, &c.description);
        set(&mut self.category, &c.category);
        set(&mut self.status, &c.status);
        set(&mut self.inherent_probability, &c.inherent_probability);
        set(&mut self.inherent_impact, &c.inherent_impact);
        set(&mut self.residual_probability, &c.residual_probability);
        set(&mut self.residual_impact, &c.residual_impact);
        set(&mut self.website, &c.website);
        set(&mut self.assignee_id, &c.assignee_id);
        self.updated_at = now;
    }
}

/// The schemas of this module's inputs, as the validation checks them.
#[cfg(feature = "openapi")]
mod schemas {
    crate::openapi::text_fields! {
        name = text(1, super::NAME_MAX);
        description = text(1, super::DESCRIPTION_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_applies_defaults_and_checks_the_website() {
        let input: NewVendor = serde_json::from_str(r#"{"name":"Acme","description":"Hosting"}"#).unwrap();
        let vendor = Vendor::create(OrganizationId::generate(), input, Timestamp::now()).unwrap();
        assert_eq!(vendor.category, VendorCategory::Other);
        assert_eq!(vendor.status, VendorStatus::NotAssessed);
        let bad: NewVendor =
            serde_json::from_str(r#"{"name":"Acme","description":"Hosting","website":"not a url"}"#).unwrap();
        let error = Vendor::create(OrganizationId::generate(), bad, Timestamp::now()).unwrap_err();
        assert_eq!(error.0[0].field, "website");
    }
}
