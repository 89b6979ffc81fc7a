//! Sign-in attempts and the provider accounts linked to users.

use async_trait::async_trait;
use compliance_domain::people::User;
use compliance_domain::{Timestamp, UserId};
use compliance_ports::{RepoError, SignInAttempt, SignInRepository};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::db::{db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::rows::{UserRow, instant, naive};
use crate::schema::{sessions, sign_in_attempts, user_identities, users};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = sign_in_attempts)]
struct AttemptRow {
    state_hash: String,
    nonce: String,
    verifier_hash: String,
    redirect: String,
    created_at: time::PrimitiveDateTime,
    expires_at: time::PrimitiveDateTime,
}

impl From<&SignInAttempt> for AttemptRow {
    fn from(a: &SignInAttempt) -> Self {
        Self {
            state_hash: a.state_hash.clone(),
            nonce: a.nonce.clone(),
            verifier_hash: a.verifier_hash.clone(),
            redirect: a.redirect.clone(),
            created_at: naive(a.created_at),
            expires_at: naive(a.expires_at),
        }
    }
}

impl From<AttemptRow> for SignInAttempt {
    fn from(r: AttemptRow) -> Self {
        Self {
            state_hash: r.state_hash,
            nonce: r.nonce,
            verifier_hash: r.verifier_hash,
            redirect: r.redirect,
            created_at: instant(r.created_at),
            expires_at: instant(r.expires_at),
        }
    }
}

#[derive(Insertable)]
#[diesel(table_name = user_identities)]
struct IdentityRow<'a> {
    issuer: &'a str,
    subject: &'a str,
    user_id: &'a str,
    created_at: time::PrimitiveDateTime,
}

#[async_trait]
impl SignInRepository for Store {
    async fn insert_attempt(&self, attempt: &SignInAttempt, now: Timestamp) -> Result<(), RepoError> {
        let row = AttemptRow::from(attempt);
        let now = naive(now);
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| {
            async {
                // abandoned attempts go as new ones come: the table holds ten minutes of sign-ins
                diesel::delete(sign_in_attempts::table.filter(sign_in_attempts::expires_at.lt(now))).execute(c).await?;
                diesel::insert_into(sign_in_attempts::table).values(&row).execute(c).await
            }
            .await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn take_attempt(&self, state_hash: &str) -> Result<Option<SignInAttempt>, RepoError> {
        let mut conn = self.pools.write().await?;
        // DELETE … RETURNING: of two racing callbacks, only one gets the row.
        let row: Option<AttemptRow> = db_run!(&mut conn, |c| {
            diesel::delete(sign_in_attempts::table.find(state_hash))
                .returning(AttemptRow::as_returning())
                .get_result(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        Ok(row.map(SignInAttempt::from))
    }

    async fn find_by_identity(&self, issuer: &str, subject: &str) -> Result<Option<User>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<UserRow> = db_run!(&mut conn, |c| {
            user_identities::table
                .inner_join(users::table)
                .filter(user_identities::issuer.eq(issuer))
                .filter(user_identities::subject.eq(subject))
                .select(UserRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(User::try_from).transpose()
    }

    async fn find_by_email(&self, email: &str) -> Result<Option<User>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<UserRow> = db_run!(&mut conn, |c| {
            users::table.filter(users::email.eq(email)).select(UserRow::as_select()).first(c).await.optional()
        })
        .map_err(repo_error)?;
        row.map(User::try_from).transpose()
    }

    async fn link_identity(&self, user: &UserId, issuer: &str, subject: &str, now: Timestamp) -> Result<(), RepoError> {
        let row = IdentityRow { issuer, subject, user_id: user.as_str(), created_at: naive(now) };
        let now = naive(now);
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let verified: bool = users::table.find(user.as_str()).select(users::email_verified).first(c).await?;
            if !verified {
                let theirs = user_identities::user_id.eq(user.as_str());
                diesel::delete(user_identities::table.filter(theirs)).execute(c).await?;
                diesel::delete(sessions::table.filter(sessions::user_id.eq(user.as_str()))).execute(c).await?;
            }
            diesel::insert_into(user_identities::table).values(&row).execute(c).await?;
            diesel::update(users::table.find(user.as_str()))
                .set((users::email_verified.eq(true), users::updated_at.eq(now)))
                .execute(c)
                .await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn insert_with_identity(&self, user: &User, issuer: &str, subject: &str) -> Result<(), RepoError> {
        let user_row = UserRow::from(user);
        let row = IdentityRow { issuer, subject, user_id: user.id.as_str(), created_at: naive(user.created_at) };
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            diesel::insert_into(users::table).values(&user_row).execute(c).await?;
            diesel::insert_into(user_identities::table).values(&row).execute(c).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }
}
