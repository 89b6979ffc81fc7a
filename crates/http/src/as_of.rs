//! `asOf`: the query parameter that asks for a status at a past moment (controls, frameworks).

use compliance_domain::Timestamp;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::ApiError;

/// `asOf`: the moment a status is asked for. Any other parameter is a 400 naming it.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AsOfQuery {
    /// An RFC 3339 date-time not in the future, e.g. `2026-06-30T00:00:00Z`: the status from the
    /// evidence recorded up to then and the evidence-source links and requirement mappings in
    /// force then (those removed since included). Absent: now.
    #[param(value_type = Option<String>, format = DateTime)]
    as_of: Option<String>,
}

impl AsOfQuery {
    /// The moment asked for; `None` for now. A malformed value is a 400 naming `asOf`.
    pub(crate) fn moment(&self) -> Result<Option<Timestamp>, ApiError> {
        parse_as_of(self.as_of.as_deref())
    }
}

/// The moment `asOf`'s text names; `None` for now. A malformed value is a 400 naming `asOf`.
pub(crate) fn parse_as_of(text: Option<&str>) -> Result<Option<Timestamp>, ApiError> {
    text.map(|text| {
        Timestamp::parse(text)
            .map_err(|_| ApiError::invalid_field("asOf", "must be an RFC 3339 date-time such as 2026-06-30T00:00:00Z"))
    })
    .transpose()
}
