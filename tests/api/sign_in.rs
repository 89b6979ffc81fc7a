//! Sign-in with OpenID Connect, sessions, self-service organizations and invitations, against a
//! real OpenID provider (npm `oidc-provider`, see `oidc_provider.rs`) driven through its own login
//! and consent pages.

use serde_json::{Value, json};

use crate::client::{Auth, Client};
use crate::harness::{PATIENCE, TestServer, poll_until};
use crate::oidc_provider::{Browser, OTHER_CLIENT_ID, OidcProvider, location, param, session_cookie, with_param};

/// Runs each `async fn NAME(server: &TestServer, provider: &OidcProvider)` on both backends with a
/// fresh provider; `NAME with ENV` adds environment variables to the server.
macro_rules! oidc_tests {
    ($($name:ident $(with $env:expr)?),+ $(,)?) => {
        oidc_tests!(@backend sqlite, Sqlite, $($name $(with $env)?),+);
        oidc_tests!(@backend postgres, Postgres, $($name $(with $env)?),+);
    };
    (@backend $module:ident, $backend:ident, $($name:ident $(with $env:expr)?),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    #[allow(unused_variables)]
                    let env: &[(&str, &str)] = &[];
                    $(let env: &[(&str, &str)] = $env;)?
                    $crate::oidc_provider::run($crate::harness::Backend::$backend, env, |server, provider| async move {
                        super::$name(&server, &provider).await
                    })
                    .await;
                }
            )+
        }
    };
}

oidc_tests!(
    signing_in_sets_a_session_that_me_accepts,
    a_state_is_used_once_and_only_by_its_browser,
    an_id_token_with_another_nonce_is_refused,
    a_code_for_another_audience_is_refused,
    redirects_elsewhere_are_refused,
    signing_out_revokes_the_session,
    users_list_and_end_their_own_sessions,
    an_address_proved_later_takes_the_account_back,
    invitations_make_members_of_verified_addresses,
    an_expired_invitation_is_gone with &[("INVITATION_TTL_SECONDS", "1")],
    signed_in_users_create_organizations,
    look_alike_addresses_never_reach_an_account,
    self_service_organizations_can_be_turned_off with &[("SELF_SERVICE_ORGANIZATIONS", "false")],
);

fn signed_in(server: &TestServer, token: &str) -> Client {
    server.client(Auth::Session(token.to_owned()), None)
}

async fn signing_in_sets_a_session_that_me_accepts(server: &TestServer, provider: &OidcProvider) {
    let browser = Browser::new(server);
    let authorization = browser.start("/policies?tab=open").await;
    assert!(authorization.starts_with(&format!("{}/auth?", provider.issuer)), "{authorization}");
    assert!(authorization.contains("code_challenge_method=S256"), "{authorization}");
    for name in ["state", "nonce", "code_challenge"] {
        assert!(param(&authorization, name).is_some_and(|v| v.len() >= 43), "{name} in {authorization}");
    }
    let callback = browser.authorize(&authorization, "ada").await;
    let response = browser.finish(&callback).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/policies?tab=open");
    let set_cookies: Vec<String> =
        response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect();
    let session = set_cookies.iter().find(|c| c.starts_with("session_token=")).expect("session_token is set");
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=604800"] {
        assert!(session.contains(flag), "{flag} in {session}");
    }
    assert!(!session.contains("Secure"), "PUBLIC_URL is http: no Secure flag in {session}");
    let token = session_cookie(&response).unwrap();

    let me = signed_in(server, &token).get("/v1/me").await.ok(200);
    assert_eq!(me["user"]["email"], "ada@acme.test");
    assert_eq!(me["user"]["emailVerified"], true);
    assert_eq!(me["user"]["name"], "Ada Lovelace");
    assert_eq!(me["user"]["image"], "https://pictures.acme.test/ada.png");
    assert_eq!(me["memberships"], json!([]));

    // signing in again finds the same user by the provider's subject
    let again = Browser::new(server).sign_in("ada").await;
    let me_again = signed_in(server, &again).get("/v1/me").await.ok(200);
    assert_eq!(me_again["user"]["id"], me["user"]["id"]);

    // the harness logs warnings and errors: the refusals below write some; none may hold a secret
    assert_eq!(browser.finish(&callback).await.status(), 400);
    let logs = server.stderr_containing("Invalid state").await;
    let code = param(&callback.0, "code").unwrap();
    let state = param(&callback.0, "state").unwrap();
    for secret in [code.as_str(), state.as_str(), token.as_str()] {
        assert!(!logs.contains(secret), "a secret reached the log");
    }
}

async fn a_state_is_used_once_and_only_by_its_browser(server: &TestServer, _: &OidcProvider) {
    let browser = Browser::new(server);
    let callback = browser.authorize(&browser.start("/").await, "ada").await;
    assert_eq!(browser.finish(&callback).await.status(), 303);
    let replay = browser.finish(&callback).await;
    assert_eq!(replay.status(), 400, "a used state is refused");
    assert!(session_cookie(&replay).is_none());
    let page = replay.text().await.unwrap();
    assert!(page.contains("Sign-in failed") && page.contains("already used"), "{page}");

    // a callback that reaches another browser (no binding cookie) is refused
    let callback = browser.authorize(&browser.start("/").await, "ada").await;
    let elsewhere = Browser::new(server).finish(&callback).await;
    assert_eq!(elsewhere.status(), 400);
    assert!(elsewhere.text().await.unwrap().contains("another browser"));
    // and the attempt is spent: the right browser cannot use it afterwards either
    assert_eq!(browser.finish(&callback).await.status(), 400);

    let denied = browser.get(&format!("{}/auth/callback?error=access_denied", server.base_url())).await;
    assert_eq!(denied.status(), 400);
    server.stderr_containing("Invalid state").await;
    server.stderr_containing("OAuth callback error").await;
}

async fn an_id_token_with_another_nonce_is_refused(server: &TestServer, _: &OidcProvider) {
    let browser = Browser::new(server);
    // the provider issues a real ID token, for a nonce that is not this sign-in's
    let authorization = with_param(&browser.start("/").await, "nonce", "a-nonce-of-another-sign-in-0123456789abcdef");
    let callback = browser.authorize(&authorization, "ada").await;
    let response = browser.finish(&callback).await;
    assert_eq!(response.status(), 400);
    assert!(session_cookie(&response).is_none());
    assert!(response.text().await.unwrap().contains("could not be verified"));
    let logs = server.stderr_containing("Token exchange failed").await;
    assert!(logs.contains("nonce does not match"), "{logs}");
}

async fn a_code_for_another_audience_is_refused(server: &TestServer, _: &OidcProvider) {
    let browser = Browser::new(server);
    // a code the provider issued to another client, fed to our callback with a valid state
    let authorization = with_param(&browser.start("/").await, "client_id", OTHER_CLIENT_ID);
    let callback = browser.authorize(&authorization, "ada").await;
    let response = browser.finish(&callback).await;
    assert_eq!(response.status(), 400);
    assert!(session_cookie(&response).is_none());
    let logs = server.stderr_containing("Token exchange failed").await;
    assert!(logs.contains("refused: invalid_grant"), "{logs}");
}

async fn redirects_elsewhere_are_refused(server: &TestServer, _: &OidcProvider) {
    let anonymous = server.anonymous();
    for redirect in ["//evil.example", "/\\evil.example", "https://evil.example/", "evil.example", "/%09/x\\y"] {
        let path = format!("/auth/login?redirect={}", crate::oidc_provider::encode(redirect));
        let problem = anonymous.get(&path).await.invalid("redirect");
        assert!(problem["detail"].as_str().unwrap().contains("path on this service"), "{redirect}: {problem}");
    }
}

async fn signing_out_revokes_the_session(server: &TestServer, _: &OidcProvider) {
    let browser = Browser::new(server);
    let token = browser.sign_in("ada").await;
    let logout = format!("{}/auth/logout", server.base_url());
    let cross_site = browser.http.post(&logout).header("Origin", "https://evil.example").send().await.unwrap();
    assert_eq!(cross_site.status(), 403, "a cross-origin post does not sign out");
    signed_in(server, &token).get("/v1/me").await.ok(200);

    let out = browser.http.post(&logout).header("Origin", server.base_url()).send().await.unwrap();
    assert_eq!(out.status(), 204);
    let cleared = out.headers().get("set-cookie").unwrap().to_str().unwrap().to_owned();
    assert!(cleared.starts_with("session_token=;") && cleared.contains("Max-Age=0"), "{cleared}");
    signed_in(server, &token).get("/v1/me").await.problem(401);
    signed_in(server, &token).get("/v1/sessions").await.problem(401);
}

async fn users_list_and_end_their_own_sessions(server: &TestServer, _: &OidcProvider) {
    let first = Browser::new(server).sign_in("ada").await;
    let second = Browser::new(server).sign_in("ada").await;
    let listed = signed_in(server, &first).get("/v1/sessions").await.ok(200);
    let sessions = listed["data"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    let current: Vec<&Value> = sessions.iter().filter(|s| s["current"] == true).collect();
    assert_eq!(current.len(), 1, "{listed}");
    let other_id = sessions.iter().find(|s| s["current"] == false).unwrap()["id"].as_str().unwrap().to_owned();

    // another user cannot see or end them
    let cy = Browser::new(server).sign_in("cy").await;
    assert_eq!(signed_in(server, &cy).get("/v1/sessions").await.ok(200)["data"].as_array().unwrap().len(), 1);
    signed_in(server, &cy).delete(&format!("/v1/sessions/{other_id}")).await.problem(404);
    signed_in(server, &second).get("/v1/me").await.ok(200);

    assert_eq!(signed_in(server, &first).delete(&format!("/v1/sessions/{other_id}")).await.status, 204);
    signed_in(server, &second).get("/v1/me").await.problem(401);
    signed_in(server, &first).get("/v1/me").await.ok(200);
    signed_in(server, &first).delete(&format!("/v1/sessions/{other_id}")).await.problem(404);
}

/// Someone signs in first with an address their provider did not verify (account pre-hijacking);
/// when the address's owner signs in with it verified, the account is theirs alone: the first
/// person's linked account and sessions are gone, and they cannot sign in to it again.
/// An address that only looks like another once case-folded (the KELVIN SIGN before the `@`)
/// neither signs in to that account nor receives an invitation meant for it.
async fn look_alike_addresses_never_reach_an_account(server: &TestServer, _: &OidcProvider) {
    let kelvin = Browser::new(server).sign_in("kelvin").await;
    let me = signed_in(server, &kelvin).get("/v1/me").await.ok(200);
    let tenant = server.tenant().await;
    let look_alike = json!({"email": "\u{212A}elvin@acme.test", "role": "admin"});
    tenant.api.post("/v1/invitations", look_alike).await.invalid("email");

    let browser = Browser::new(server);
    let callback = browser.authorize(&browser.start("/").await, "kelvin-look-alike").await;
    let response = browser.finish(&callback).await;
    assert_eq!(response.status(), 400, "the look-alike is refused");
    assert!(session_cookie(&response).is_none(), "and gets no session");
    assert_eq!(signed_in(server, &kelvin).get("/v1/me").await.ok(200)["user"], me["user"]);
}

async fn an_address_proved_later_takes_the_account_back(server: &TestServer, _: &OidcProvider) {
    let squatter = Browser::new(server).sign_in("bob").await;
    let squatted = signed_in(server, &squatter).get("/v1/me").await.ok(200);
    assert_eq!(squatted["user"]["emailVerified"], false, "{squatted}");

    let owner = Browser::new(server).sign_in("bob-owner").await;
    let me = signed_in(server, &owner).get("/v1/me").await.ok(200);
    assert_eq!(me["user"]["id"], squatted["user"]["id"], "the address's account is linked, not duplicated");
    assert_eq!(me["user"]["emailVerified"], true, "{me}");
    signed_in(server, &squatter).get("/v1/me").await.problem(401);

    let browser = Browser::new(server);
    let callback = browser.authorize(&browser.start("/").await, "bob").await;
    let again = browser.finish(&callback).await;
    assert_eq!(again.status(), 409, "the unverified account no longer reaches the user");
    signed_in(server, &owner).get("/v1/me").await.ok(200);
}

async fn invitations_make_members_of_verified_addresses(server: &TestServer, _: &OidcProvider) {
    let tenant = server.tenant().await;
    let invite = |email: &str, role: &str| {
        let api = tenant.api.clone();
        let body = json!({"email": email, "role": role, "department": "it"});
        async move { api.post("/v1/invitations", body).await.ok(201) }
    };
    let for_ada = invite("Ada@Acme.test", "admin").await;
    assert_eq!(for_ada["email"], "ada@acme.test");
    assert_eq!(for_ada["status"], "pending");
    let accept_url = for_ada["acceptUrl"].as_str().unwrap().to_owned();
    assert!(accept_url.starts_with(&format!("{}/invitations/accept?token=cpi_", server.base_url())), "{accept_url}");
    let token = param(&accept_url, "token").unwrap();
    assert!(token.len() >= 4 + 32, "at least 128 random bits");
    let id = for_ada["id"].as_str().unwrap().to_owned();
    let got = tenant.api.get(&format!("/v1/invitations/{id}")).await.ok(200);
    assert!(got.get("acceptUrl").is_none(), "the token is shown once: {got}");
    let listed = tenant.api.get("/v1/invitations").await.ok(200);
    assert_eq!(listed["data"][0]["id"], id.as_str());

    // only owners and admins invite
    let (employee, _) = server.member(&tenant, "employee").await;
    let employee_api = server.api_key(&tenant, &employee.id).await;
    employee_api.post("/v1/invitations", json!({"email": "x@acme.test", "role": "admin"})).await.problem(403);
    employee_api.get("/v1/invitations").await.problem(403);

    let ada = signed_in(server, &Browser::new(server).sign_in("ada").await);
    let cy = signed_in(server, &Browser::new(server).sign_in("cy").await);
    let bob = signed_in(server, &Browser::new(server).sign_in("bob").await);
    cy.post("/v1/invitations/accept", json!({"token": token})).await.problem(403);
    let for_bob = invite("bob@acme.test", "employee").await;
    let bob_token = param(for_bob["acceptUrl"].as_str().unwrap(), "token").unwrap();
    let unverified = bob.post("/v1/invitations/accept", json!({"token": bob_token})).await.problem(403);
    assert!(unverified["detail"].as_str().unwrap().contains("not verified"), "{unverified}");
    tenant.api.post("/v1/invitations/accept", json!({"token": token})).await.problem(403);
    ada.post("/v1/invitations/accept", json!({"token": "cpi_unknown"})).await.problem(404);

    let member = ada.post("/v1/invitations/accept", json!({"token": token})).await.ok(201);
    assert_eq!(member["organizationId"], tenant.org_id.as_str());
    assert_eq!(member["role"], "admin");
    assert_eq!(member["department"], "it");
    let me = ada.get("/v1/me").await.ok(200);
    assert_eq!(
        me["memberships"],
        json!([{"organizationId": tenant.org_id, "name": tenant.org["name"], "role": "admin"}])
    );
    ada.post("/v1/invitations/accept", json!({"token": token})).await.problem(410);
    assert_eq!(tenant.api.get(&format!("/v1/invitations/{id}")).await.ok(200)["status"], "accepted");
    // the new member works in the organization with the session
    ada.with_org(Some(&tenant.org_id)).get("/v1/people").await.ok(200);

    // a second invitation of a member is a 409
    let again = invite("ada@acme.test", "employee").await;
    let again_token = param(again["acceptUrl"].as_str().unwrap(), "token").unwrap();
    ada.post("/v1/invitations/accept", json!({"token": again_token})).await.problem(409);

    // a withdrawn invitation is gone
    let for_cy = invite("cy@acme.test", "auditor").await;
    let cy_id = for_cy["id"].as_str().unwrap();
    assert_eq!(tenant.api.delete(&format!("/v1/invitations/{cy_id}")).await.status, 204);
    tenant.api.get(&format!("/v1/invitations/{cy_id}")).await.problem(404);
    let cy_token = param(for_cy["acceptUrl"].as_str().unwrap(), "token").unwrap();
    cy.post("/v1/invitations/accept", json!({"token": cy_token})).await.problem(404);

    // another organization sees none of them
    let other = server.tenant().await;
    other.api.get(&format!("/v1/invitations/{id}")).await.problem(404);
    other.api.delete(&format!("/v1/invitations/{id}")).await.problem(404);
    assert_eq!(other.api.get("/v1/invitations").await.ok(200)["count"], 0);
}

async fn an_expired_invitation_is_gone(server: &TestServer, _: &OidcProvider) {
    let tenant = server.tenant().await;
    let invitation =
        tenant.api.post("/v1/invitations", json!({"email": "dee@acme.test", "role": "employee"})).await.ok(201);
    let id = invitation["id"].as_str().unwrap().to_owned();
    let token = param(invitation["acceptUrl"].as_str().unwrap(), "token").unwrap();
    let dee = signed_in(server, &Browser::new(server).sign_in("dee").await);
    let expired = poll_until(PATIENCE, || {
        let api = tenant.api.clone();
        let path = format!("/v1/invitations/{id}");
        async move { (api.get(&path).await.ok(200)["status"] == "expired").then_some(()) }
    })
    .await;
    assert!(expired.is_some(), "INVITATION_TTL_SECONDS=1: the invitation expires");
    let gone = dee.post("/v1/invitations/accept", json!({"token": token})).await.problem(410);
    assert!(gone["detail"].as_str().unwrap().contains("expired"), "{gone}");
    assert_eq!(dee.get("/v1/me").await.ok(200)["memberships"], json!([]));
}

async fn signed_in_users_create_organizations(server: &TestServer, _: &OidcProvider) {
    let ada = signed_in(server, &Browser::new(server).sign_in("ada").await);
    let organization = ada.post("/v1/organizations", json!({"name": "Ada's Analytical Engines"})).await.ok(201);
    let org_id = organization["id"].as_str().unwrap();
    let me = ada.get("/v1/me").await.ok(200);
    assert_eq!(
        me["memberships"],
        json!([{"organizationId": org_id, "name": "Ada's Analytical Engines", "role": "owner"}])
    );
    let own = ada.with_org(Some(org_id)).get("/v1/organization").await.ok(200);
    assert_eq!(own["id"], org_id);
    // the organization and its owner's membership, each with an entry by Ada
    let log = ada.with_org(Some(org_id)).get("/v1/audit-log").await.ok(200);
    let mut entries = log["data"].as_array().unwrap().clone();
    entries.sort_by_key(|e| e["seq"].as_i64());
    let actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["organization.created", "member.created"], "in chain order: {log}");
    for entry in &entries {
        assert_eq!(entry["actor"]["type"], "user", "{entry}");
        assert_eq!(entry["organizationId"], org_id);
    }
    assert_eq!(entries[0]["resourceId"], org_id);
    assert_eq!(entries[1]["actor"]["id"], entries[1]["changes"]["userId"]["to"], "the owner made it: {log}");
    assert_eq!(entries[1]["changes"]["role"], json!({"from": null, "to": "owner"}));
    // an API key is not a person signing up
    let tenant = server.tenant().await;
    tenant.api.post("/v1/organizations", json!({"name": "By key"})).await.problem(403);
    server.anonymous().post("/v1/organizations", json!({"name": "Nobody"})).await.problem(401);
}

async fn self_service_organizations_can_be_turned_off(server: &TestServer, _: &OidcProvider) {
    let ada = signed_in(server, &Browser::new(server).sign_in("ada").await);
    let refused = ada.post("/v1/organizations", json!({"name": "Not allowed"})).await.problem(403);
    assert!(refused["detail"].as_str().unwrap().contains("does not let users create"), "{refused}");
    assert_eq!(ada.get("/v1/me").await.ok(200)["memberships"], json!([]));
}

/// A server without `OIDC_*`: no OpenID provider runs.
mod not_configured {
    use serde_json::json;

    use crate::harness::TestServer;

    api_tests!(sign_in_without_oidc_settings_is_404);

    async fn sign_in_without_oidc_settings_is_404(server: &TestServer) {
        let anonymous = server.anonymous();
        for path in ["/auth/login", "/auth/login?redirect=/x", "/auth/callback?code=a&state=b"] {
            let problem = anonymous.get(path).await.problem(404);
            assert_eq!(problem["detail"], "sign-in is not configured", "{path}");
        }
        assert_eq!(anonymous.post("/auth/logout", json!({})).await.problem(404)["detail"], "sign-in is not configured");
        // the operator's sessions still work, and /v1/me needs no organization
        let tenant = server.tenant().await;
        let session = server.session(&tenant.owner.id, None).await;
        let me = session.get("/v1/me").await.ok(200);
        assert_eq!(me["user"]["id"], tenant.owner.id.as_str());
        assert_eq!(me["memberships"][0]["role"], "owner");
        let by_key = tenant.api.get("/v1/me").await.ok(200);
        assert_eq!(by_key["memberships"].as_array().unwrap().len(), 1);
    }
}
