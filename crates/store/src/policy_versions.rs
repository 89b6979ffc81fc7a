//! Policies' published versions and their signatures: the rows of `policy_versions` and
//! `policy_signatures`, and the reads of `PolicyRepository` about them (its writes are in
//! policies.rs, with the policy they change).

use std::collections::{BTreeMap, HashMap, HashSet};

use compliance_domain::policy::{
    PolicySignature, PolicyVersion, PolicyVersionSummary, RichText, Signer, VersionSigners,
};
use compliance_domain::{OrganizationId, PolicyId, Timestamp, UserId};
use compliance_ports::RepoError;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::db::{Pools, db_run};
use crate::error::{corrupt, repo_error};
use crate::rows::{id, instant, naive, optional_id};
use crate::schema::{members, policy_signatures, policy_versions, users};

const VERSIONS: &str = "policy_versions";

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = policy_versions)]
pub struct PolicyVersionRow {
    organization_id: String,
    policy_id: String,
    number: i32,
    name: String,
    content: String,
    change_note: Option<String>,
    published_at: PrimitiveDateTime,
    published_by: Option<String>,
    approved_by: Option<String>,
    approved_at: Option<PrimitiveDateTime>,
}

impl From<&PolicyVersion> for PolicyVersionRow {
    fn from(v: &PolicyVersion) -> Self {
        Self {
            organization_id: v.organization_id.to_string(),
            policy_id: v.policy_id.to_string(),
            number: v.number,
            name: v.name.clone(),
            content: v.content.json().get().to_owned(),
            change_note: v.change_note.clone(),
            published_at: naive(v.published_at),
            published_by: v.published_by.as_ref().map(ToString::to_string),
            approved_by: v.approved_by.as_ref().map(ToString::to_string),
            approved_at: v.approved_at.map(naive),
        }
    }
}

impl TryFrom<PolicyVersionRow> for PolicyVersion {
    type Error = RepoError;
    fn try_from(r: PolicyVersionRow) -> Result<Self, RepoError> {
        Ok(Self {
            organization_id: id(VERSIONS, r.organization_id)?,
            policy_id: id(VERSIONS, r.policy_id)?,
            number: r.number,
            name: r.name,
            content: RichText::from_stored(r.content).map_err(|error| corrupt(VERSIONS, error))?,
            change_note: r.change_note,
            published_at: instant(r.published_at),
            published_by: optional_id(VERSIONS, r.published_by)?,
            approved_by: optional_id(VERSIONS, r.approved_by)?,
            approved_at: r.approved_at.map(instant),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = policy_signatures)]
pub struct PolicySignatureRow {
    organization_id: String,
    policy_id: String,
    version: i32,
    user_id: String,
    signed_at: PrimitiveDateTime,
}

impl From<&PolicySignature> for PolicySignatureRow {
    fn from(s: &PolicySignature) -> Self {
        Self {
            organization_id: s.organization_id.to_string(),
            policy_id: s.policy_id.to_string(),
            version: s.version,
            user_id: s.user_id.to_string(),
            signed_at: naive(s.signed_at),
        }
    }
}

/// A version without its content.
type SummaryRow =
    (i32, String, Option<String>, PrimitiveDateTime, Option<String>, Option<String>, Option<PrimitiveDateTime>);

pub(crate) async fn list_versions(
    pools: &Pools,
    org: &OrganizationId,
    policy: &PolicyId,
) -> Result<Vec<PolicyVersionSummary>, RepoError> {
    let (org, policy) = (org.as_str(), policy.as_str());
    let mut conn = pools.read().await?;
    let (rows, counts): (Vec<SummaryRow>, Vec<(i32, i64)>) = db_run!(&mut conn, |c| async {
        let rows = policy_versions::table
            .filter(policy_versions::organization_id.eq(org))
            .filter(policy_versions::policy_id.eq(policy))
            .order(policy_versions::number.asc())
            .select((
                policy_versions::number,
                policy_versions::name,
                policy_versions::change_note,
                policy_versions::published_at,
                policy_versions::published_by,
                policy_versions::approved_by,
                policy_versions::approved_at,
            ))
            .load(c)
            .await?;
        let counts = policy_signatures::table
            .filter(policy_signatures::organization_id.eq(org))
            .filter(policy_signatures::policy_id.eq(policy))
            .group_by(policy_signatures::version)
            .select((policy_signatures::version, diesel::dsl::count_star()))
            .load(c)
            .await?;
        Ok::<_, diesel::result::Error>((rows, counts))
    }
    .await)
    .map_err(repo_error)?;
    let counts: HashMap<i32, i64> = counts.into_iter().collect();
    rows.into_iter()
        .map(|(number, name, change_note, published_at, published_by, approved_by, approved_at)| {
            Ok(PolicyVersionSummary {
                number,
                name,
                change_note,
                published_at: instant(published_at),
                published_by: optional_id(VERSIONS, published_by)?,
                approved_by: optional_id(VERSIONS, approved_by)?,
                approved_at: approved_at.map(instant),
                signature_count: counts.get(&number).copied().unwrap_or(0),
            })
        })
        .collect()
}

pub(crate) async fn get_version(
    pools: &Pools,
    org: &OrganizationId,
    policy: &PolicyId,
    number: i32,
) -> Result<PolicyVersion, RepoError> {
    let mut conn = pools.read().await?;
    let row: PolicyVersionRow = db_run!(&mut conn, |c| {
        policy_versions::table
            .filter(policy_versions::organization_id.eq(org.as_str()))
            .filter(policy_versions::policy_id.eq(policy.as_str()))
            .filter(policy_versions::number.eq(number))
            .select(PolicyVersionRow::as_select())
            .first(c)
            .await
    })
    .map_err(repo_error)?;
    row.try_into()
}

/// Who signed, oldest signature first; the active members who did not, by name.
pub(crate) async fn signers(
    pools: &Pools,
    org: &OrganizationId,
    policy: &PolicyId,
    number: i32,
) -> Result<VersionSigners, RepoError> {
    let (org, policy) = (org.as_str(), policy.as_str());
    let mut conn = pools.read().await?;
    type SignedRow = (String, String, String, PrimitiveDateTime);
    let (signed, members): (Vec<SignedRow>, Vec<(String, String, String)>) = db_run!(&mut conn, |c| async {
        let signed = policy_signatures::table
            .inner_join(users::table.on(users::id.eq(policy_signatures::user_id)))
            .filter(policy_signatures::organization_id.eq(org))
            .filter(policy_signatures::policy_id.eq(policy))
            .filter(policy_signatures::version.eq(number))
            .order((policy_signatures::signed_at.asc(), policy_signatures::user_id.asc()))
            .select((policy_signatures::user_id, users::name, users::email, policy_signatures::signed_at))
            .load(c)
            .await?;
        let members = members::table
            .inner_join(users::table)
            .filter(members::organization_id.eq(org))
            .filter(members::is_active.eq(true))
            .order((users::name.asc(), users::id.asc()))
            .select((users::id, users::name, users::email))
            .load(c)
            .await?;
        Ok::<_, diesel::result::Error>((signed, members))
    }
    .await)
    .map_err(repo_error)?;
    let signed_ids: HashSet<&str> = signed.iter().map(|(user, ..)| user.as_str()).collect();
    let unsigned = members
        .iter()
        .filter(|(user, ..)| !signed_ids.contains(user.as_str()))
        .map(|(user, name, email)| {
            Ok(Signer {
                user_id: id(VERSIONS, user.clone())?,
                name: name.clone(),
                email: email.clone(),
                signed_at: None,
            })
        })
        .collect::<Result<_, RepoError>>()?;
    let signed = signed
        .into_iter()
        .map(|(user, name, email, at)| {
            Ok(Signer { user_id: id(VERSIONS, user)?, name, email, signed_at: Some(instant(at)) })
        })
        .collect::<Result<_, RepoError>>()?;
    Ok(VersionSigners { signed, unsigned })
}

/// When `user` signed each version of the organization's policies: (policy id, version) → time.
pub(crate) async fn signatures_of_user(
    pools: &Pools,
    org: &OrganizationId,
    user: &UserId,
) -> Result<BTreeMap<(String, i32), Timestamp>, RepoError> {
    let mut conn = pools.read().await?;
    let rows: Vec<(String, i32, PrimitiveDateTime)> = db_run!(&mut conn, |c| {
        policy_signatures::table
            .filter(policy_signatures::organization_id.eq(org.as_str()))
            .filter(policy_signatures::user_id.eq(user.as_str()))
            .select((policy_signatures::policy_id, policy_signatures::version, policy_signatures::signed_at))
            .load(c)
            .await
    })
    .map_err(repo_error)?;
    Ok(rows.into_iter().map(|(policy, version, at)| ((policy, version), instant(at))).collect())
}
