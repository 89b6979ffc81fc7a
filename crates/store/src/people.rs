//! Users, memberships and credentials.

use async_trait::async_trait;
use compliance_domain::access::{Role, holds};
use compliance_domain::people::{ApiKey, LAST_OWNER, Member, MemberPatch, Person, Session, User};
use compliance_domain::{ApiKeyId, MemberId, OrganizationId, Timestamp, UserId};
use compliance_ports::{
    AuditEach, AuditOf, CredentialRepository, Cursor, MemberRepository, Page, PageRequest, RepoError, UserRepository,
};
use diesel::prelude::*;
use diesel::sql_types::Bool;
use diesel_async::{AsyncConnection, RunQueryDsl};

use crate::Store;
use crate::audit::AuditChain;
use crate::db::db_run;
use crate::error::{TxError, repo_error};
use crate::paging::read_page;
use crate::rows::{ApiKeyRow, MemberRow, SessionRow, UserRow, person};
use crate::schema::{api_keys, members, organizations, sessions, users};

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
        db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                let head = c.lock_head(org).await?;
                diesel::insert_into(members::table).values(&row).execute(c).await?;
                c.append(head, audit(None, Some(member))).await
            })
            .await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn list(
        &self,
        org: &OrganizationId,
        include_inactive: bool,
        page: &PageRequest,
    ) -> Result<Page<Person>, RepoError> {
        // Which `is_active` values to list: a filter that does not depend on a branch, so that the
        // rows and the count share it.
        let listed: &'static [bool] = if include_inactive { &[true, false] } else { &[true] };
        let org = org.to_string();
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(MemberRow, UserRow)>, _) = read_page!(
            &mut conn,
            page,
            members::table
                .inner_join(users::table)
                .filter(members::organization_id.eq(org.as_str()))
                .filter(members::is_active.eq_any(listed)),
            (MemberRow::as_select(), UserRow::as_select()),
            members::created_at,
            members::id
        )
        .map_err(repo_error)?;
        let people = rows.into_iter().map(person).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(people, page, total, |p| Cursor {
            created_at: p.member.created_at,
            id: p.member.id.to_string(),
        }))
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

    /// Read, modify, write in one transaction, whose first statement updates the row to itself:
    /// that takes the row's lock on PostgreSQL, as `SELECT … FOR UPDATE` would (SQLite has no such
    /// clause, and one writer), so a concurrent patch waits and is not overwritten.
    async fn update(
        &self,
        org: &OrganizationId,
        id: &MemberId,
        patch: &MemberPatch,
        audit: &AuditOf<'_, Member>,
    ) -> Result<Person, RepoError> {
        let mut conn = self.pools.write().await?;
        let the_member =
            || members::table.filter(members::organization_id.eq(org.as_str())).filter(members::id.eq(id.as_str()));
        let result: Result<Person, TxError> = db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                let head = c.lock_head(org.as_str()).await?;
                // One membership change per organization at a time: the last-owner rule below
                // counts the other members, and two demotions must not each count the other owner.
                diesel::update(organizations::table.find(org.as_str()))
                    .set(organizations::id.eq(organizations::id))
                    .execute(c)
                    .await?;
                diesel::update(the_member()).set(members::role.eq(members::role)).execute(c).await?;
                let mut member = Member::try_from(the_member().select(MemberRow::as_select()).first(c).await?)?;
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
                c.append(head, audit(Some(&before), Some(&member))).await?;
                let user: UserRow =
                    users::table.find(member.user_id.as_str()).select(UserRow::as_select()).first(c).await?;
                Ok(Person { member, user: user.try_into()? })
            })
            .await
        });
        result.map_err(RepoError::from)
    }
}

#[async_trait]
impl CredentialRepository for Store {
    async fn insert_api_key(&self, key: &ApiKey, audit: &AuditOf<'_, ApiKey>) -> Result<(), RepoError> {
        let row = ApiKeyRow::from(key);
        let org = key.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                let head = c.lock_head(org).await?;
                diesel::insert_into(api_keys::table).values(&row).execute(c).await?;
                c.append(head, audit(None, Some(key))).await
            })
            .await
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
                .filter(api_keys::organization_id.eq(org.as_str()))
                .filter(everyone.into_sql::<Bool>().or(api_keys::created_by.eq(creator.as_str()))),
            ApiKeyRow::as_select(),
            api_keys::created_at,
            api_keys::id
        )
        .map_err(repo_error)?;
        let keys = rows.into_iter().map(ApiKey::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(keys, page, total, |k| Cursor { created_at: k.created_at, id: k.id.to_string() }))
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

    /// Revoking twice keeps the first revocation time and writes no second entry.
    async fn revoke_api_key(
        &self,
        id: &ApiKeyId,
        at: Timestamp,
        audit: &AuditOf<'_, ApiKey>,
    ) -> Result<ApiKey, RepoError> {
        let mut conn = self.pools.write().await?;
        let at = at.to_utc_naive();
        let the_key = || api_keys::table.find(id.as_str());
        let found: ApiKey = db_run!(&mut conn, |c| the_key().select(ApiKeyRow::as_select()).first(c).await)
            .map_err(repo_error)?
            .try_into()?;
        if found.revoked_at.is_some() {
            return Ok(found);
        }
        let org = found.organization_id.to_string();
        let result: Result<ApiKey, TxError> = db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                // The head first, as every audited write: the key read after it is the one replaced.
                let head = c.lock_head(&org).await?;
                let before: ApiKey = the_key().select(ApiKeyRow::as_select()).first(c).await?.try_into()?;
                diesel::update(the_key().filter(api_keys::revoked_at.is_null()))
                    .set(api_keys::revoked_at.eq(at))
                    .execute(c)
                    .await?;
                let after: ApiKey = the_key().select(ApiKeyRow::as_select()).first(c).await?.try_into()?;
                c.append(head, audit(Some(&before), Some(&after))).await?;
                Ok(after)
            })
            .await
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
        let result: Result<(), TxError> = db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                diesel::insert_into(sessions::table).values(&row).execute(c).await?;
                // Each organization the user is an active member of, by id (the order every such
                // change locks their chain heads in).
                let orgs: Vec<String> = members::table
                    .filter(members::user_id.eq(user))
                    .filter(members::is_active.eq(true))
                    .select(members::organization_id)
                    .order(members::organization_id.asc())
                    .load(c)
                    .await?;
                for org in orgs {
                    let head = c.lock_head(&org).await?;
                    let org = OrganizationId::parse(&org).map_err(|e| crate::error::corrupt("members", e))?;
                    c.append(head, audit(&org, None, Some(session))).await?;
                }
                Ok(())
            })
            .await
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
