//! The catalog of checks: the tests the providers ship (`checks/` in the repository), filtered by
//! provider and severity. Every role that reads integrations reads it: it holds no organization's
//! data, but says what the service can see of a connected account.

use compliance_domain::access::{Action, Family};
use compliance_domain::check::{Check, CheckSeverity, catalog, check};

use crate::access::require;
use crate::{AppError, Principal};

/// Which checks of the catalog a list keeps: within a field, any of the values; across fields,
/// all of them; an empty field keeps everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckFilter {
    /// Provider slugs (`aws`, `github`, `google-workspace`, `fleetdm`).
    pub provider: Vec<String>,
    /// Severities.
    pub severity: Vec<CheckSeverity>,
}

impl CheckFilter {
    fn keeps(&self, check: &Check) -> bool {
        (self.provider.is_empty() || self.provider.contains(&check.provider))
            && (self.severity.is_empty() || self.severity.contains(&check.severity))
    }
}

/// The check catalog's use cases.
#[derive(Debug, Default)]
pub struct CheckService;

impl CheckService {
    /// The checks `filter` keeps, by id.
    pub fn list_checks(&self, caller: &Principal, filter: &CheckFilter) -> Result<Vec<&'static Check>, AppError> {
        require(caller, Family::Checks, Action::Read)?;
        Ok(catalog().iter().filter(|check| filter.keeps(check)).collect())
    }

    /// The check `id`.
    pub fn get_check(&self, caller: &Principal, id: &str) -> Result<&'static Check, AppError> {
        require(caller, Family::Checks, Action::Read)?;
        check(id).ok_or(AppError::NotFound("check"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn principal(role: &str) -> Principal {
        Principal::session_with_role(role)
    }

    #[test]
    fn filters_keep_any_value_of_a_field_and_all_fields() {
        let owner = principal("owner");
        let all = CheckService.list_checks(&owner, &CheckFilter::default()).unwrap();
        assert_eq!(all.len(), catalog().len());
        let filter =
            CheckFilter { provider: vec!["aws".into(), "github".into()], severity: vec![CheckSeverity::Critical] };
        let kept = CheckService.list_checks(&owner, &filter).unwrap();
        assert!(!kept.is_empty());
        assert!(
            kept.iter()
                .all(|c| ["aws", "github"].contains(&c.provider.as_str()) && c.severity == CheckSeverity::Critical)
        );
        let expected = catalog()
            .iter()
            .filter(|c| (c.provider == "aws" || c.provider == "github") && c.severity == CheckSeverity::Critical)
            .count();
        assert_eq!(kept.len(), expected);
        let none = CheckFilter { provider: vec!["nobody".into()], ..CheckFilter::default() };
        assert!(CheckService.list_checks(&owner, &none).unwrap().is_empty());
    }

    #[test]
    fn employees_read_no_checks_and_an_unknown_id_is_not_found() {
        assert!(matches!(
            CheckService.list_checks(&principal("employee"), &CheckFilter::default()),
            Err(AppError::Denied(_))
        ));
        assert!(matches!(
            CheckService.get_check(&principal("auditor"), "aws.nothing"),
            Err(AppError::NotFound("check"))
        ));
        assert_eq!(CheckService.get_check(&principal("auditor"), "aws.iam.root-mfa").unwrap().provider, "aws");
    }
}
