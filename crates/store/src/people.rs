//! Users, memberships and credentials.

use async_trait::async_trait;
use compliance_domain::access::{Role, holds};
use compliance_domain::etag::IfMatch;
use compliance_domain::people::{ApiKey, LAST_OWNER, Member, MemberPatch, Person, Session, User};
use compliance_domain::{ApiKeyId, MemberId, OrganizationId, Timestamp, UserId};
use compliance_ports::{
    AuditEach, AuditOf, BulkApplied, BulkError, BulkWrite, CredentialRepository, Cursor, MemberRepository, Page,
    PageRequest, PersonFilter, PersonQuery, PersonSort, RepoError, RevokedApiKey, SortValue, UserRepository,
};
use diesel::prelude::*;
use diesel::sql_types::Bool;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::audit::AuditQueue;
use crate::bulk::Failures;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
use crate::paging::{
    Boxed, Condition, ListBackend, SortColumn, SortColumns, any_of, newest_first, read_page, sort_columns, text_in,
    time_range,
};
use crate::rows::{ApiKeyRow, AttachmentRow, MemberRow, SessionRow, UserRow, person};
use crate::schema::{api_keys, members, organizations, sessions, users};
use crate::search;

/// The members (with their users) of `people_matching`.
type People = diesel::dsl::InnerJoinQuerySource<members::table, users::table>;

/// The organization's people that match every filter of `query`: active ones only unless
/// `include_inactive` (or `isActive`, which wins over it, says otherwise).
fn people_matching<ST, DB: ListBackend>(
    matching: Boxed<ST, People, DB>,
    org: &str,
    include_inactive: bool,
    query: &PersonQuery,
) -> Boxed<ST, People, DB> {
    let PersonFilter { role, is_active, department } = &query.filter;
    let active: Option<Condition<People, DB>> = match (is_active, include_inactive) {
        (Some(active), _) => Some(Box::new(members::is_active.eq(DB::boolean(*active)))),
        (None, false) => Some(Box::new(members::is_active.eq(DB::boolean(true)))),
        (None, true) => None,
    };
    // A member's role text may name several roles (`compliance_domain::access::roles`): the
    // word anywhere in it, without case.
    let roles = any_of(role.iter().map(|role| -> Condition<People, DB> {
        DB::contains(Box::new(crate::paging::lower(members::role)), role.as_str())
    }));
    let conditions = [
        active,
        roles,
        text_in(members::department, department),
        time_range(&query.times, members::created_at, None::<members::created_at>),
        search::filter(&search::PEOPLE, org, query.search.as_ref()),
    ];
    let mut matching = matching.filter(members::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The columns `query` orders people by, the member id last.
fn person_order<DB: ListBackend>(query: &PersonQuery) -> SortColumns<People, DB> {
    let column = |field| match field {
        PersonSort::CreatedAt => SortColumn::time(members::created_at),
        PersonSort::Name => SortColumn::text(users::name),
        PersonSort::Email => SortColumn::text(users::email),
    };
    sort_columns(&query.sort_keys(PersonSort::CreatedAt), column, members::id)
}

/// A person's value of a sort field, as its cursor holds it.
fn person_sort_value(person: &Person, field: PersonSort) -> SortValue {
    match field {
        PersonSort::CreatedAt => SortValue::Time(person.member.created_at),
        PersonSort::Name => SortValue::Text(person.user.name.clone()),
        PersonSort::Email => SortValue::Text(person.user.email.clone()),
    }
}

#[async_trait]
impl UserRepository for Store {
    async fn insert(&self, user: &User) -> Result<(), RepoError> {
        let row = UserRow::from(user);
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| diesel::insert_into(users::table).values(&row).execute(c).await).map_err(repo_error)?;
        Ok(())
    }

    async fn get(&self, id: &UserId) -> Result<User, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: UserRow =
            db_run!(&mut conn, |c| users::table.find(id.as_str()).select(UserRow::as_select()).first(c).await)
                .map_err(repo_error)?;
        row.try_into()
    }

    async fn record_login(&self, id: &UserId, at: Timestamp) -> Result<(), RepoError> {
        let mut conn = self.pools.write().await?;
        let at = at.to_utc_naive();
        db_run!(&mut conn, |c| {
            diesel::update(users::table.find(id.as_str())).set(users::last_login.eq(at)).execute(c).await
        })
        .map_err(repo_error)?;
        Ok(())
    }
}

#[async_trait]
impl MemberRepository for Store {
    async fn insert(&self, member: &Member, audit: &AuditOf<'_, Member>) -> Result<(), RepoError> {
        let row = MemberRow::from(member);
        let org = member.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(members::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(member))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn list(
        &self,
        org: &OrganizationId,
        include_inactive: bool,
        query: &PersonQuery,
    ) -> Result<Page<Person>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(MemberRow, UserRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            people_matching(members::table.inner_join(users::table).into_boxed(), &org, include_inactive, &matching),
            (MemberRow::as_select(), UserRow::as_select(), search::relevance(&search::PEOPLE, &org, &matching)),
            search::order(&search::PEOPLE, &org, &matching, person_order(&matching)),
            None,
        )
        .map_err(repo_error)?;
        let people = rows
            .into_iter()
            .map(|(member, user, relevance)| Ok((person((member, user))?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(PersonSort::CreatedAt);
        let page = Page::from_rows(people, &query.page, total, |(p, relevance)| {
            let values = keys.iter().map(|key| person_sort_value(p, key.field)).collect();
            search::cursor(query, *relevance, values, p.member.id.to_string())
        });
        Ok(page.map(|(p, _)| p))
    }

    async fn get(&self, org: &OrganizationId, id: &MemberId) -> Result<Person, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: (MemberRow, UserRow) = db_run!(&mut conn, |c| {
            members::table
                .inner_join(users::table)
                .filter(members::organization_id.eq(org.as_str()))
                .filter(members::id.eq(id.as_str()))
                .select((MemberRow::as_select(), UserRow::as_select()))
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        person(row)
    }

    async fn record_member_login(&self, org: &OrganizationId, id: &MemberId, at: Timestamp) -> Result<(), RepoError> {
        let mut conn = self.pools.write().await?;
        let at = at.to_utc_naive();
        db_run!(&mut conn, |c| {
            diesel::update(members::table.find(id.as_str()).filter(members::organization_id.eq(org.as_str())))
                .set(members::last_login.eq(at))
                .execute(c)
                .await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn find_by_user(&self, org: &OrganizationId, user: &UserId) -> Result<Option<Person>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<(MemberRow, UserRow)> = db_run!(&mut conn, |c| {
            members::table
                .inner_join(users::table)
                .filter(members::organization_id.eq(org.as_str()))
                .filter(members::user_id.eq(user.as_str()))
                .select((MemberRow::as_select(), UserRow::as_select()))
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(person).transpose()
    }

    /// Read, modify, write in one transaction: it updates the organization's row and then the
    /// member's row to themselves, which takes their locks on
    /// PostgreSQL as `SELECT … FOR UPDATE` would (SQLite has no such clause, and one writer), so a
    /// concurrent patch waits and is not overwritten.
    async fn update(
        &self,
        org: &OrganizationId,
        id: &MemberId,
        patch: &MemberPatch,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Member>,
    ) -> Result<Person, RepoError> {
        let mut conn = self.pools.write().await?;
        let the_member =
            || members::table.filter(members::organization_id.eq(org.as_str())).filter(members::id.eq(id.as_str()));
        let result: Result<Person, TxError> = write_transaction!(&mut conn, async |c| {
            // One membership change per organization at a time: the last-owner rule below
            // counts the other members, and two demotions must not each count the other owner.
            diesel::update(organizations::table.find(org.as_str()))
                .set(organizations::id.eq(organizations::id))
                .execute(c)
                .await?;
            diesel::update(the_member()).set(members::role.eq(members::role)).execute(c).await?;
            let mut member = Member::try_from(the_member().select(MemberRow::as_select()).first(c).await?)?;
            let user_of = |member: &Member| users::table.find(member.user_id.to_string()).select(UserRow::as_select());
            let user: UserRow = user_of(&member).first(c).await?;
            if_match.check(&Person { member: member.clone(), user: user.try_into()? }.etag())?;
            let was_owner = member.is_active_owner();
            let before = member.clone();
            member.apply(patch);
            diesel::update(the_member()).set(&MemberRow::from(&member)).execute(c).await?;
            if was_owner && !member.is_active_owner() {
                let roles: Vec<String> = members::table
                    .filter(members::organization_id.eq(org.as_str()))
                    .filter(members::is_active.eq(true))
                    .select(members::role)
                    .load(c)
                    .await?;
                if !roles.iter().any(|role| holds(role, Role::Owner)) {
                    return Err(TxError::Repo(RepoError::Conflict(LAST_OWNER.into())));
                }
            }
            c.append(audit(Some(&before), Some(&member))).await?;
            let user: UserRow = user_of(&member).first(c).await?;
            Ok(Person { member, user: user.try_into()? })
        });
        result.map_err(RepoError::from)
    }

    /// The writes in order in one transaction, after the organization's lock (taken once), each as
    /// `insert` or `update` does it: for an update the member's lock and the last-owner rule, then
    /// the entry.
    async fn apply_member_bulk(
        &self,
        org: &OrganizationId,
        writes: &[BulkWrite<Member, MemberId, MemberPatch>],
        audit: &AuditOf<'_, Member>,
    ) -> Result<BulkApplied<Person>, BulkError> {
        let mut conn = self.pools.write().await.map_err(RepoError::from)?;
        let the_member = |id: &MemberId| {
            members::table.filter(members::organization_id.eq(org.to_string())).filter(members::id.eq(id.to_string()))
        };
        let mut failures = Failures::default();
        let result: Result<Vec<(Person, Vec<AttachmentRow>)>, TxError> = write_transaction!(&mut conn, async |c| {
            // The organization once, for every operation: as `update` and `insert` take it.
            lock_organization(c.any(), org.as_str()).await?;
            let mut applied = Vec::with_capacity(writes.len());
            for (index, write) in writes.iter().enumerate() {
                let one: Result<Member, TxError> = async {
                    match write {
                        BulkWrite::Create(member) => {
                            let row = MemberRow::from(member);
                            diesel::insert_into(members::table).values(&row).execute(c).await?;
                            c.append(audit(None, Some(member))).await?;
                            Ok(member.clone())
                        }
                        BulkWrite::Update(id, patch) => {
                            // the member's lock and the rule of `update`, above
                            diesel::update(the_member(id)).set(members::role.eq(members::role)).execute(c).await?;
                            let mut member =
                                Member::try_from(the_member(id).select(MemberRow::as_select()).first(c).await?)?;
                            let was_owner = member.is_active_owner();
                            let before = member.clone();
                            member.apply(patch);
                            diesel::update(the_member(id)).set(&MemberRow::from(&member)).execute(c).await?;
                            if was_owner && !member.is_active_owner() {
                                let roles: Vec<String> = members::table
                                    .filter(members::organization_id.eq(org.as_str()))
                                    .filter(members::is_active.eq(true))
                                    .select(members::role)
                                    .load(c)
                                    .await?;
                                if !roles.iter().any(|role| holds(role, Role::Owner)) {
                                    return Err(TxError::Repo(RepoError::Conflict(LAST_OWNER.into())));
                                }
                            }
                            c.append(audit(Some(&before), Some(&member))).await?;
                            Ok(member)
                        }
                        BulkWrite::Delete(_) => {
                            Err(TxError::Repo(RepoError::Internal("members are deactivated, never deleted".into())))
                        }
                    }
                }
                .await;
                let one = match one {
                    Ok(member) => users::table
                        .find(member.user_id.as_str())
                        .select(UserRow::as_select())
                        .first(c)
                        .await
                        .map_err(TxError::from)
                        .and_then(|user| Ok(Person { member, user: user.try_into()? })),
                    Err(error) => Err(error),
                };
                match one {
                    Ok(person) => applied.push((person, Vec::new())),
                    Err(error) => {
                        if !failures.record(index, error) {
                            break;
                        }
                    }
                }
            }
            failures.commit_or_roll_back(applied)
        });
        failures.answer(result)
    }
}

#[async_trait]
impl CredentialRepository for Store {
    async fn insert_api_key(&self, key: &ApiKey, audit: &AuditOf<'_, ApiKey>) -> Result<(), RepoError> {
        let row = ApiKeyRow::from(key);
        let org = key.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(api_keys::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(key))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn find_api_key(&self, key_hash: &str) -> Result<Option<ApiKey>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<ApiKeyRow> = db_run!(&mut conn, |c| {
            api_keys::table
                .filter(api_keys::key_hash.eq(key_hash))
                .select(ApiKeyRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(ApiKey::try_from).transpose()
    }

    async fn list_api_keys(
        &self,
        org: &OrganizationId,
        created_by: Option<&UserId>,
        page: &PageRequest,
    ) -> Result<Page<ApiKey>, RepoError> {
        // One filter whatever is asked, so that the rows and the count share it.
        let everyone = created_by.is_none();
        let creator = created_by.map_or_else(String::new, UserId::to_string);
        let org = org.to_string();
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<ApiKeyRow>, _) = read_page!(
            &mut conn,
            page,
            api_keys::table
                .into_boxed()
                .filter(api_keys::organization_id.eq(org.clone()))
                .filter(everyone.into_sql::<Bool>().or(api_keys::created_by.eq(creator.clone()))),
            ApiKeyRow::as_select(),
            newest_first(api_keys::created_at, api_keys::id),
            None,
        )
        .map_err(repo_error)?;
        let keys = rows.into_iter().map(ApiKey::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(keys, page, total, |k| Cursor::newest_first(k.created_at, k.id.to_string())))
    }

    async fn get_api_key(&self, org: &OrganizationId, id: &ApiKeyId) -> Result<ApiKey, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: ApiKeyRow = db_run!(&mut conn, |c| {
            api_keys::table
                .filter(api_keys::organization_id.eq(org.as_str()))
                .filter(api_keys::id.eq(id.as_str()))
                .select(ApiKeyRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn api_key_organization(&self, id: &ApiKeyId) -> Result<OrganizationId, RepoError> {
        let mut conn = self.pools.read().await?;
        let org: String = db_run!(&mut conn, |c| {
            api_keys::table.find(id.as_str()).select(api_keys::organization_id).first(c).await
        })
        .map_err(repo_error)?;
        crate::rows::id("api_keys", org)
    }

    /// Revoking twice keeps the first revocation time and writes no second entry. The keys made
    /// from the key are found under the organization's lock (`crate::locks::lock_organization`),
    /// which every key's insert takes too, so no child can be made meanwhile by a key being
    /// revoked.
    async fn revoke_api_key(
        &self,
        org: &OrganizationId,
        id: &ApiKeyId,
        at: Timestamp,
        audit: &AuditOf<'_, ApiKey>,
    ) -> Result<RevokedApiKey, RepoError> {
        let mut conn = self.pools.write().await?;
        let at = at.to_utc_naive();
        let org = org.as_str();
        let the_key = || api_keys::table.filter(api_keys::organization_id.eq(org)).filter(api_keys::id.eq(id.as_str()));
        let found: ApiKey = db_run!(&mut conn, |c| the_key().select(ApiKeyRow::as_select()).first(c).await)
            .map_err(repo_error)?
            .try_into()?;
        if found.revoked_at.is_some() {
            return Ok(RevokedApiKey { key: found, descendants: Vec::new() });
        }
        let result: Result<RevokedApiKey, TxError> = write_transaction!(&mut conn, async |c| {
            // The organization's lock first: the key read after it is the one replaced.
            lock_organization(c.any(), org).await?;
            let before: ApiKey = the_key().select(ApiKeyRow::as_select()).first(c).await?.try_into()?;
            diesel::update(the_key().filter(api_keys::revoked_at.is_null()))
                .set(api_keys::revoked_at.eq(at))
                .execute(c)
                .await?;
            let after: ApiKey = the_key().select(ApiKeyRow::as_select()).first(c).await?.try_into()?;
            c.append(audit(Some(&before), Some(&after))).await?;
            // Its descendants, generation by generation; those not revoked yet go with it.
            let (mut live, mut parents) = (Vec::new(), vec![id.to_string()]);
            while !parents.is_empty() {
                let rows: Vec<ApiKeyRow> = api_keys::table
                    .filter(api_keys::organization_id.eq(org))
                    .filter(api_keys::parent_id.eq_any(parents.clone()))
                    .select(ApiKeyRow::as_select())
                    .load(c)
                    .await?;
                let children = rows.into_iter().map(ApiKey::try_from).collect::<Result<Vec<_>, _>>()?;
                parents = children.iter().map(|child| child.id.to_string()).collect();
                live.extend(children.into_iter().filter(|child| child.revoked_at.is_none()));
            }
            if live.is_empty() {
                return Ok(RevokedApiKey { key: after, descendants: Vec::new() });
            }
            let ids: Vec<&str> = live.iter().map(|key| key.id.as_str()).collect();
            diesel::update(
                api_keys::table
                    .filter(api_keys::organization_id.eq(org))
                    .filter(api_keys::id.eq_any(ids.clone()))
                    .filter(api_keys::revoked_at.is_null()),
            )
            .set(api_keys::revoked_at.eq(at))
            .execute(c)
            .await?;
            let revoked: Vec<ApiKey> = live
                .iter()
                .map(|key| ApiKey { revoked_at: Some(Timestamp::from_utc_naive(at)), ..key.clone() })
                .collect();
            let drafts = live.iter().zip(&revoked).map(|(before, after)| audit(Some(before), Some(after))).collect();
            c.append_many(drafts).await?;
            Ok(RevokedApiKey { key: after, descendants: revoked })
        });
        result.map_err(RepoError::from)
    }

    async fn touch_api_key(&self, id: &ApiKeyId, at: Timestamp) -> Result<(), RepoError> {
        let mut conn = self.pools.write().await?;
        let at = at.to_utc_naive();
        db_run!(&mut conn, |c| {
            diesel::update(api_keys::table.find(id.as_str())).set(api_keys::last_used_at.eq(at)).execute(c).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn insert_session(&self, session: &Session, audit: &AuditEach<'_, Session>) -> Result<(), RepoError> {
        let row = SessionRow::from(session);
        let user = session.user_id.as_str();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            diesel::insert_into(sessions::table).values(&row).execute(c).await?;
            // Each organization the user is an active member of, by id (the order every such
            // change locks their rows in).
            let orgs: Vec<String> = members::table
                .filter(members::user_id.eq(user))
                .filter(members::is_active.eq(true))
                .select(members::organization_id)
                .order(members::organization_id.asc())
                .load(c)
                .await?;
            for org in orgs {
                lock_organization(c.any(), &org).await?;
                let org = OrganizationId::parse(&org).map_err(|e| crate::error::corrupt("members", e))?;
                c.append(audit(&org, None, Some(session))).await?;
            }
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn find_session(&self, token_hash: &str) -> Result<Option<Session>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<SessionRow> = db_run!(&mut conn, |c| {
            sessions::table
                .filter(sessions::token_hash.eq(token_hash))
                .select(SessionRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(Session::try_from).transpose()
    }
}
