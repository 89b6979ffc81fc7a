//! Ready-made data: users, organizations with an owner, an API key and a session.

use serde_json::Value;

use crate::client::{Auth, Client};
use crate::harness::{TestServer, random_hex};

/// A user created through the CLI.
#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub email: String,
    pub name: String,
}

/// An organization with an owner who has an API key and a session.
#[derive(Debug)]
pub struct Tenant {
    /// The organization as `admin create-org` printed it.
    pub org: Value,
    pub org_id: String,
    pub owner: User,
    pub owner_member_id: String,
    pub api_key_id: String,
    /// Sends the owner's API key, without `X-Organization-Id`.
    pub api: Client,
    /// Sends the owner's session cookie and `X-Organization-Id` of this organization.
    pub session: Client,
}

/// A unique, slug-safe name such as `acme-3f9a0c1d`.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", random_hex(4))
}

fn id_of(value: &Value) -> String {
    value["id"].as_str().unwrap_or_else(|| panic!("no string `id` in {value}")).to_owned()
}

impl Tenant {
    /// Deactivates the member `member_id` (`PATCH /v1/people/{id}` with `isActive: false`).
    pub async fn deactivate(&self, member_id: &str) {
        let member = self.api.patch(&format!("/v1/people/{member_id}"), serde_json::json!({"isActive": false})).await;
        assert_eq!(member.ok(200)["isActive"], false);
    }
}

impl TestServer {
    /// A fresh organization with an owner, an API key and a session.
    pub async fn tenant(&self) -> Tenant {
        let slug = unique("org");
        let org = self.admin().create_org(&format!("Org {slug}"), &slug).await;
        let org_id = id_of(&org);
        let owner = self.user().await;
        let member = self.admin().add_member(&org_id, &owner.id, "owner").await;
        let key = self.admin().create_api_key(&org_id, &owner.id).await;
        let api_key = key["key"].as_str().unwrap_or_else(|| panic!("no `key` in {key}"));
        let api = self.client(Auth::ApiKey(api_key.to_owned()), None);
        let session = self.session(&owner.id, Some(&org_id)).await;
        Tenant { owner_member_id: id_of(&member), api_key_id: id_of(&key), org, org_id, owner, api, session }
    }

    /// A fresh user with a unique email.
    pub async fn user(&self) -> User {
        let name = unique("user");
        let email = format!("{name}@example.test");
        let user = self.admin().create_user(&email, &name).await;
        User { id: id_of(&user), email, name }
    }

    /// A fresh user who joins `tenant` with `role`; returns the user and the Member.
    pub async fn member(&self, tenant: &Tenant, role: &str) -> (User, Value) {
        let user = self.user().await;
        let member = self.admin().add_member(&tenant.org_id, &user.id, role).await;
        (user, member)
    }

    /// A new API key of `tenant` created by `user_id`, and a client sending it.
    pub async fn api_key(&self, tenant: &Tenant, user_id: &str) -> Client {
        let key = self.admin().create_api_key(&tenant.org_id, user_id).await;
        let key = key["key"].as_str().unwrap_or_else(|| panic!("no `key` in {key}"));
        self.client(Auth::ApiKey(key.to_owned()), None)
    }

    /// A client with a new session of `user_id`, sending `X-Organization-Id: org` when given.
    pub async fn session(&self, user_id: &str, org: Option<&str>) -> Client {
        let session = self.admin().create_session(user_id).await;
        let token = session["token"].as_str().unwrap_or_else(|| panic!("no `token` in {session}"));
        self.client(Auth::Session(token.to_owned()), org)
    }
}
