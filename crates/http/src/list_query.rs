//! The query string of a list: filters, time ranges, `q`, `sort`, `limit` and `cursor`, parsed
//! strictly: a parameter the list does not know, a value outside its enumeration or a malformed
//! date is a 400 naming the parameter, never silently ignored.
//!
//! A handler takes [`ListParams`], reads its list's own filters from it (`enums`, `assignees`,
//! `flag`, …), then calls [`ListParams::finish`], which reads the parameters every list shares and
//! refuses whatever is left.

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpRequest, dev::Payload};
use compliance_app::Settings;
use compliance_domain::{Id, IdKind, MemberId, Timestamp};
use compliance_ports::{Assignee, ListQuery, Search, SortKey, TimeRange};
use serde::Deserialize;
use serde::de::IntoDeserializer;
use sha2::{Digest, Sha256};
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
use utoipa::{IntoParams, ToSchema};

use crate::ApiError;
use crate::paging::{MAX_LIMIT, decode};

/// The longest `q` may be (so at most 100 words).
const MAX_SEARCH_CHARS: usize = 200;
/// The most values one filter may list.
const MAX_VALUES: usize = 50;

/// A list's sortable fields, by their wire names (`sort=-updatedAt,title`).
pub trait SortField: Copy + 'static {
    const FIELDS: &'static [(&'static str, Self)];
}

/// `sort` as the OpenAPI document shows it: comma-separated names of `F`, each with `-` for
/// descending, every name listed in its enumeration.
pub struct SortParam<F>(std::marker::PhantomData<F>);

impl<F: SortField> IntoParams for SortParam<F> {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let names: Vec<String> =
            F::FIELDS.iter().flat_map(|(name, _)| [name.to_string(), format!("-{name}")]).collect();
        let name = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names));
        let sort = ParameterBuilder::new()
            .name("sort")
            .parameter_in(ParameterIn::Query)
            .required(Required::False)
            .style(Some(ParameterStyle::Form))
            .explode(Some(false))
            .description(Some("Sort keys, comma-separated, each with `-` for descending; default `-createdAt`."))
            .schema(Some(ArrayBuilder::new().items(name).min_items(Some(1))))
            .build();
        vec![sort]
    }
}

/// The time ranges of a list whose records have a creation and an update time. Documents the
/// parameters [`ListParams::finish`] reads.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, reason = "read by ListParams::finish; this struct documents them")]
pub struct TimeParams {
    /// Created at or after this time (RFC 3339).
    #[param(rename = "createdAfter")]
    created_after: Option<Timestamp>,
    /// Created before this time (RFC 3339).
    #[param(rename = "createdBefore")]
    created_before: Option<Timestamp>,
    /// Last changed at or after this time (RFC 3339).
    #[param(rename = "updatedAfter")]
    updated_after: Option<Timestamp>,
    /// Last changed before this time (RFC 3339).
    #[param(rename = "updatedBefore")]
    updated_before: Option<Timestamp>,
    /// Words to search for in the list's text fields (1 to 200 characters, split into words at
    /// anything not a letter or digit), whatever their case and accents: each whole, the last as
    /// a prefix (`back` finds "backups"); a `q` without a letter or digit matches nothing. Without
    /// `sort`, the results come by relevance (a title holding every word first), then newest first.
    #[param(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    q: Option<String>,
}

/// The time range and search of a list whose records have no update time.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, reason = "read by ListParams::finish; this struct documents them")]
pub struct CreatedParams {
    /// Created at or after this time (RFC 3339).
    #[param(rename = "createdAfter")]
    created_after: Option<Timestamp>,
    /// Created before this time (RFC 3339).
    #[param(rename = "createdBefore")]
    created_before: Option<Timestamp>,
    /// Words to search for in the list's text fields (1 to 200 characters, split into words at
    /// anything not a letter or digit), whatever their case and accents: each whole, the last as
    /// a prefix (`back` finds "backups"); a `q` without a letter or digit matches nothing. Without
    /// `sort`, the results come by relevance (a title holding every word first), then newest first.
    #[param(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    q: Option<String>,
}

/// The query string's parameters, each to be taken once by the list's parser.
#[derive(Debug, Default)]
pub struct ListParams {
    pairs: Vec<(String, String)>,
}

impl FromRequest for ListParams {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let pairs = url::form_urlencoded::parse(req.query_string().as_bytes()).into_owned().collect();
        ready(Ok(Self { pairs }))
    }
}

/// Everything a list's rows depend on but the page: the list and its parameters other than
/// `limit` and `cursor`, in a canonical order. A cursor carries its fingerprint, so that one
/// issued for another list, filter, search or sort is refused; the list cache keys pages by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueryShape(String);

impl QueryShape {
    /// The shape of a list that takes no parameter but its page.
    pub fn unfiltered(list: &str) -> Self {
        Self(list.to_owned())
    }

    /// A short digest of the shape, as cursors carry it.
    pub fn fingerprint(&self) -> String {
        hex::encode(&Sha256::digest(self.0.as_bytes())[..8])
    }
}

impl ListParams {
    /// Parameters read from a query string (for tests and other extractors).
    pub fn parse(query: &str) -> Self {
        Self::from_pairs(url::form_urlencoded::parse(query.as_bytes()).into_owned().collect())
    }

    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        Self { pairs }
    }

    /// Removes and returns every value of `name`.
    pub fn take(&mut self, name: &str) -> Vec<String> {
        let (taken, kept) = std::mem::take(&mut self.pairs).into_iter().partition(|(n, _)| n == name);
        self.pairs = kept;
        taken.into_iter().map(|(_, value)| value).collect()
    }

    /// The one value of `name`, if given; given twice is a 400.
    pub fn single(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        let mut values = self.take(name);
        match values.len() {
            0 | 1 => Ok(values.pop()),
            _ => Err(ApiError::invalid_field(name, "may be given once")),
        }
    }

    /// Every value of `name`, each parsed as one of the enumeration's wire names (repeat the
    /// parameter for "any of").
    pub fn enums<T: std::str::FromStr>(&mut self, name: &str) -> Result<Vec<T>, ApiError>
    where
        T::Err: std::fmt::Display,
    {
        let values = self.values(name)?;
        values.iter().map(|v| v.parse().map_err(|e: T::Err| ApiError::invalid_field(name, e.to_string()))).collect()
    }

    /// Every value of `name`, as given (non-empty, at most 200 characters each).
    pub fn texts(&mut self, name: &str) -> Result<Vec<String>, ApiError> {
        let values = self.values(name)?;
        match values.iter().any(|v| v.is_empty() || v.chars().count() > 200 || v.contains('\0')) {
            true => Err(ApiError::invalid_field(name, "must be 1 to 200 characters, without NUL")),
            false => Ok(values),
        }
    }

    /// Every value of `name`, each an id of kind `K`.
    pub fn ids<K: IdKind>(&mut self, name: &str) -> Result<Vec<Id<K>>, ApiError> {
        let values = self.values(name)?;
        values
            .into_iter()
            .map(|v| Id::parse_owned(v).map_err(|e| ApiError::invalid_field(name, e.to_string())))
            .collect()
    }

    /// `assigneeId=`: member ids, or `none` for the records assigned to nobody.
    pub fn assignees(&mut self, name: &str) -> Result<Vec<Assignee>, ApiError> {
        let values = self.values(name)?;
        let assignee = |v: String| match v.as_str() {
            "none" => Ok(Assignee::Nobody),
            _ => MemberId::parse_owned(v)
                .map(Assignee::Member)
                .map_err(|_| ApiError::invalid_field(name, "must be a member id (`mem_…`) or `none`")),
        };
        values.into_iter().map(assignee).collect()
    }

    /// `true` or `false`, if given.
    pub fn flag(&mut self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.single(name)?.as_deref() {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(_) => Err(ApiError::invalid_field(name, "must be `true` or `false`")),
        }
    }

    fn values(&mut self, name: &str) -> Result<Vec<String>, ApiError> {
        let values = self.take(name);
        match values.len() > MAX_VALUES {
            true => Err(ApiError::invalid_field(name, format!("may be given at most {MAX_VALUES} times"))),
            false => Ok(values),
        }
    }

    /// The shape of the list's query: `list` and every parameter but `limit` and `cursor`, sorted.
    /// Call it before taking any parameter.
    pub fn shape(&self, list: &str) -> QueryShape {
        let mut pairs: Vec<&(String, String)> =
            self.pairs.iter().filter(|(name, _)| name != "limit" && name != "cursor").collect();
        pairs.sort();
        let mut text = list.to_owned();
        for (name, value) in pairs {
            text.push_str(&format!("&{}={}", name.len(), name));
            text.push_str(&format!("={}:{}", value.len(), value));
        }
        QueryShape(text)
    }

    /// The query of a list whose filter the caller has read: reads the time ranges (`updated…`
    /// only when the list has an update time), `q`, `sort`, `limit` and `cursor`, then refuses any
    /// parameter left. `shape` is what [`ListParams::shape`] gave before any parameter was taken.
    pub fn finish<Filter, Field: SortField>(
        mut self,
        filter: Filter,
        has_updated: bool,
        shape: &QueryShape,
        settings: &Settings,
    ) -> Result<ListQuery<Filter, Field>, ApiError> {
        let mut times = TimeRange {
            created_after: self.time("createdAfter")?,
            created_before: self.time("createdBefore")?,
            ..TimeRange::default()
        };
        if has_updated {
            times.updated_after = self.time("updatedAfter")?;
            times.updated_before = self.time("updatedBefore")?;
        }
        let search = self.search()?;
        let sort = self.sort::<Field>()?;
        let limit = match self.single("limit")?.as_deref() {
            None => None,
            Some(text) => match text.parse::<usize>() {
                Ok(limit) if (1..=MAX_LIMIT).contains(&limit) => Some(limit),
                _ => return Err(ApiError::invalid_field("limit", "must be a whole number from 1 to 1000")),
            },
        };
        let after = match self.single("cursor")? {
            None => None,
            Some(text) => Some(decode(&text, &shape.fingerprint()).ok_or_else(|| {
                ApiError::invalid_field(
                    "cursor",
                    "must be a `nextCursor` this list returned for the same filters, search and sort, unchanged",
                )
            })?),
        };
        self.refuse_the_rest()?;
        Ok(ListQuery { filter, times, search, sort, page: settings.page(limit, after) })
    }

    /// A 400 naming the first parameter no one took.
    pub fn refuse_the_rest(self) -> Result<(), ApiError> {
        match self.pairs.into_iter().next() {
            None => Ok(()),
            Some((name, _)) => Err(ApiError::invalid_field(&name, "is not a parameter of this list")),
        }
    }

    /// The one instant of `name` (RFC 3339), if given.
    pub fn time(&mut self, name: &str) -> Result<Option<Timestamp>, ApiError> {
        self.single(name)?
            .map(|text| {
                Timestamp::parse(&text).map_err(|_| {
                    ApiError::invalid_field(name, "must be an RFC 3339 date and time, e.g. 2026-01-31T09:00:00Z")
                })
            })
            .transpose()
    }

    /// `q`: its words, lowercased. Empty, longer than 200 characters or with NUL is a 400; a `q`
    /// of punctuation only holds no word and matches nothing.
    fn search(&mut self) -> Result<Option<Search>, ApiError> {
        let Some(text) = self.single("q")? else { return Ok(None) };
        if text.is_empty() || text.chars().count() > MAX_SEARCH_CHARS || text.contains('\0') {
            return Err(ApiError::invalid_field(
                "q",
                format!("must be 1 to {MAX_SEARCH_CHARS} characters, without NUL"),
            ));
        }
        let words: Vec<String> =
            text.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()).map(str::to_lowercase).collect();
        Ok(Some(Search { words }))
    }

    /// `sort`: comma-separated fields, each with `-` for descending; a repeated field is ignored.
    fn sort<Field: SortField>(&mut self) -> Result<Vec<SortKey<Field>>, ApiError> {
        let Some(text) = self.single("sort")? else { return Ok(Vec::new()) };
        let names: Vec<&str> = Field::FIELDS.iter().map(|(name, _)| *name).collect();
        let mut keys: Vec<SortKey<Field>> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for part in text.split(',') {
            let (descending, name) = match part.strip_prefix('-') {
                Some(name) => (true, name),
                None => (false, part),
            };
            let Some((name, field)) = Field::FIELDS.iter().find(|(n, _)| *n == name) else {
                return Err(ApiError::invalid_field(
                    "sort",
                    format!(
                        "`{part}` is not a sortable field; one or more of {}, each with `-` for descending",
                        names.join(", ")
                    ),
                ));
            };
            // A field given again changes nothing: its first mention already decides the order.
            if !seen.contains(name) {
                seen.push(name);
                keys.push(SortKey { field: *field, descending });
            }
        }
        Ok(keys)
    }
}

/// A value of a text filter (`tag`, `role`, `provider`) as the OpenAPI document shows it: what
/// [`ListParams::texts`] accepts.
pub struct TextFilter;

impl utoipa::PartialSchema for TextFilter {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(200))
            .pattern(Some(compliance_domain::openapi::NO_NUL))
            .into()
    }
}

impl utoipa::ToSchema for TextFilter {}

/// A value of the people's `role` filter as the OpenAPI document shows it: one of the roles.
pub struct RoleFilter;

impl utoipa::PartialSchema for RoleFilter {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        compliance_domain::openapi::string_enum_schema(&compliance_domain::access::Role::ALL.map(|role| role.as_str()))
    }
}

impl utoipa::ToSchema for RoleFilter {}

/// A value of an `assigneeId` filter as the OpenAPI document shows it: a member id, or `none`
/// (what [`ListParams::assignees`] accepts).
pub struct AssigneeFilter;

impl utoipa::PartialSchema for AssigneeFilter {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^(?:mem_[0-9a-hjkmnp-tv-z]{32}|none)$"))
            .examples(["none"])
            .into()
    }
}

impl utoipa::ToSchema for AssigneeFilter {}

/// `includeInactive`: `true` or `false`.
#[derive(Deserialize, ToSchema)]
pub enum IncludeInactive {
    #[serde(rename = "true")]
    True,
    #[serde(rename = "false")]
    False,
}

impl IncludeInactive {
    /// Whether deactivated members are listed too; absent is `false`. Read here rather than by the
    /// query extractor, so that a bad value is a field error on `includeInactive`.
    pub fn read(value: Option<&str>) -> Result<bool, ApiError> {
        let Some(value) = value else { return Ok(false) };
        let read: Result<Self, serde::de::value::Error> = Self::deserialize(value.into_deserializer());
        match read {
            Ok(Self::True) => Ok(true),
            Ok(Self::False) => Ok(false),
            Err(_) => Err(ApiError::invalid_field("includeInactive", "must be true or false")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_ignores_the_page_and_the_order_of_parameters() {
        let a = ListParams::parse("status=open&status=closed&limit=5&sort=title");
        let b = ListParams::parse("sort=title&status=closed&cursor=abc&status=open");
        assert_eq!(a.shape("risks"), b.shape("risks"));
        assert_ne!(a.shape("risks"), a.shape("vendors"));
        assert_ne!(a.shape("risks"), ListParams::parse("status=open&sort=title").shape("risks"));
        // A value holding the separators cannot pose as two parameters.
        assert_ne!(ListParams::parse("a=1%26b%3D2").shape("x"), ListParams::parse("a=1&b=2").shape("x"));
    }

    #[test]
    fn search_words_are_lowercase_and_empty_is_refused() {
        let mut params = ListParams::parse("q=Back-ups%20%C3%89t%C3%A9");
        assert_eq!(
            params.search().ok().flatten().map(|s| s.words),
            Some(vec!["back".into(), "ups".into(), "été".into()])
        );
        assert_eq!(ListParams::parse("q=%20-%20").search().ok().flatten().map(|s| s.words), Some(vec![]));
        assert!(ListParams::parse("q=").search().is_err());
        assert!(ListParams::parse(&format!("q={}", "a".repeat(201))).search().is_err());
    }
}
