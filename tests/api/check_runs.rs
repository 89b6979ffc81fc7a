//! Check runs end to end: an AWS connection read from moto (a real local AWS) by the running
//! server's worker; the population kept with its digest; findings opened, excepted and resolved
//! as the account changes; roles and other organizations walled off.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::format_description::well_known::Rfc3339;

use crate::checks::{data, str_of};
use crate::client::{Auth, Client};
use crate::harness::{Backend, TestServer, run_with_owned_env};
use crate::moto::Moto;

/// Runs each listed `async fn NAME(server: &TestServer, moto: &Moto)` on both backends, with the
/// server's AWS checks pointed at a fresh moto.
macro_rules! moto_tests {
    ($($name:ident),+ $(,)?) => {
        moto_tests!(@backend sqlite, Sqlite, $($name),+);
        moto_tests!(@backend postgres, Postgres, $($name),+);
    };
    (@backend $module:ident, $backend:ident, $($name:ident),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    super::with_moto(crate::harness::Backend::$backend, |server, moto| async move {
                        super::$name(&server, &moto).await
                    })
                    .await;
                }
            )+
        }
    };
}

moto_tests!(
    a_run_keeps_its_population_and_findings_follow_the_account,
    exceptions_roles_and_other_organizations,
    a_control_linked_to_a_check_follows_its_runs,
);

async fn with_moto<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Arc<TestServer>, Arc<Moto>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let moto = Arc::new(Moto::start().await);
    let env = vec![("CHECKS_AWS_ENDPOINT_URL".to_owned(), moto.endpoint.clone())];
    run_with_owned_env(backend, env, move |server| test(server, moto)).await;
}

/// The secret access key every test connection holds: it must appear in no answer.
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY";
const CONSOLE_MFA: &str = "aws.iam.user-console-mfa";

/// Users with a console password: `mfa` says whether each has an MFA device.
pub fn console_users(moto: &Moto, users: &[(&str, bool)]) {
    let users: Vec<Value> = users.iter().map(|(name, mfa)| json!([name, mfa])).collect();
    moto.boto3(
        r#"
iam = client("iam")
for name, mfa in ARGS:
    iam.create_user(UserName=name)
    iam.create_login_profile(UserName=name, Password="A-l0ng-passw0rd!")
    if mfa:
        device = iam.create_virtual_mfa_device(VirtualMFADeviceName=name)["VirtualMFADevice"]
        iam.enable_mfa_device(UserName=name, SerialNumber=device["SerialNumber"], AuthenticationCode1="123456", AuthenticationCode2="654321")
"#,
        &json!(users),
    );
}

fn add_mfa(moto: &Moto, user: &str) {
    moto.boto3(
        r#"
iam = client("iam")
device = iam.create_virtual_mfa_device(VirtualMFADeviceName=ARGS)["VirtualMFADevice"]
iam.enable_mfa_device(UserName=ARGS, SerialNumber=device["SerialNumber"], AuthenticationCode1="123456", AuthenticationCode2="654321")
"#,
        &json!(user),
    );
}

/// Connects AWS for the client's organization; the connection's id.
pub async fn connect_aws(api: &Client) -> String {
    let credentials =
        json!({"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": SECRET_KEY, "region": "us-east-1"});
    let connection = api
        .post("/v1/integrations/connections", json!({"providerSlug": "aws", "credentials": credentials}))
        .await
        .ok(201);
    str_of(&connection, "id").to_owned()
}

/// Asks for a run and waits until it is done; the run.
pub(crate) async fn run_checks(api: &Client, connection: &str) -> Value {
    let queued = api.post(&format!("/v1/integrations/connections/{connection}/checks/run"), json!({})).await.ok(202);
    assert_eq!(queued["status"], "queued", "{queued}");
    assert_eq!(queued["trigger"], "manual", "{queued}");
    wait_done(api, str_of(&queued, "id")).await
}

/// Polls the run `id` (up to a minute) until it is finished or failed; the run.
pub async fn wait_done(api: &Client, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = api.get(&format!("/v1/check-runs/{id}")).await.ok(200);
        if run["status"] == "finished" || run["status"] == "failed" {
            return run;
        }
        assert!(Instant::now() < deadline, "the run is still {} after a minute: {run}", run["status"]);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every result of a run, read page by page.
pub(crate) async fn all_results(api: &Client, run: &str) -> Vec<Value> {
    let mut results = Vec::new();
    let mut path = format!("/v1/check-runs/{run}/results?limit=7");
    loop {
        let page = api.get(&path).await.ok(200);
        results.extend(data(&page).iter().cloned());
        match page["nextCursor"].as_str() {
            Some(cursor) => path = format!("/v1/check-runs/{run}/results?limit=7&cursor={cursor}"),
            None => {
                assert_eq!(page["count"].as_u64(), Some(results.len() as u64), "count is the whole population");
                return results;
            }
        }
    }
}

/// The population's digest as docs/checks.md tells an auditor to compute it.
fn digest(results: &[Value]) -> String {
    let mut lines: Vec<String> = results
        .iter()
        .map(|r| {
            let region = r["resource"]["region"].as_str().unwrap_or("");
            let fields = [&r["checkId"], &r["resource"]["type"], &r["resource"]["id"], &json!(region), &r["outcome"]];
            format!("{}\n", serde_json::to_string(&fields).unwrap())
        })
        .collect();
    lines.sort();
    Sha256::digest(lines.concat().as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
}

fn result_of<'a>(results: &'a [Value], check: &str, name: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["checkId"] == check && r["resource"]["name"] == name)
        .unwrap_or_else(|| panic!("no {check} result for {name}: {results:#?}"))
}

pub(crate) async fn findings(api: &Client, query: &str) -> Vec<Value> {
    data(&api.get(&format!("/v1/findings?{query}")).await.ok(200)).clone()
}

async fn a_run_keeps_its_population_and_findings_follow_the_account(server: &TestServer, moto: &Moto) {
    console_users(moto, &[("alice", true), ("bob", false)]);
    let tenant = server.tenant().await;
    let connection = connect_aws(&tenant.api).await;

    let run = run_checks(&tenant.api, &connection).await;
    assert_eq!(run["status"], "finished", "{run}");
    let results = all_results(&tenant.api, str_of(&run, "id")).await;
    assert_eq!(run["populationDigest"], digest(&results), "the digest an auditor recomputes");
    let counts = &run["counts"];
    let sum: u64 = ["pass", "fail", "error", "notApplicable"].iter().map(|k| counts[k].as_u64().unwrap()).sum();
    assert_eq!(sum, results.len() as u64, "{counts}");
    assert_eq!(result_of(&results, CONSOLE_MFA, "alice")["outcome"], "pass");
    let bob = result_of(&results, CONSOLE_MFA, "bob");
    assert_eq!(bob["outcome"], "fail", "{bob}");
    assert!(str_of(bob, "detail").contains("bob"), "{bob}");

    let open = findings(&tenant.api, &format!("checkId={CONSOLE_MFA}")).await;
    assert_eq!(open.len(), 1, "{open:#?}");
    let finding = &open[0];
    assert_eq!((finding["status"].as_str(), finding["resource"]["name"].as_str()), (Some("open"), Some("bob")));
    assert_eq!(finding["severity"], "high");
    assert_eq!(finding["connectionId"], connection.as_str());
    assert_eq!(finding["lastRunId"], run["id"]);
    let id = str_of(finding, "id").to_owned();
    assert_eq!(tenant.api.get(&format!("/v1/findings/{id}")).await.ok(200), *finding);
    assert_eq!(findings(&tenant.api, "q=bob").await.len(), 1, "search by the resource's name");
    assert!(findings(&tenant.api, "q=carol").await.is_empty());

    // Fixed in the account: the next run passes bob and resolves the finding.
    add_mfa(moto, "bob");
    let second = run_checks(&tenant.api, &connection).await;
    let results = all_results(&tenant.api, str_of(&second, "id")).await;
    assert_eq!(result_of(&results, CONSOLE_MFA, "bob")["outcome"], "pass");
    let resolved = tenant.api.get(&format!("/v1/findings/{id}")).await.ok(200);
    assert_eq!(resolved["status"], "resolved", "{resolved}");
    assert_eq!(resolved["resolvedAt"], second["finishedAt"]);
    assert!(findings(&tenant.api, "status=open&checkId=aws.iam.user-console-mfa").await.is_empty());

    // Both runs are listed, newest first, and filter by connection and status.
    let runs = tenant.api.get(&format!("/v1/check-runs?connectionId={connection}&status=finished")).await.ok(200);
    assert_eq!(
        data(&runs).iter().map(|r| r["id"].clone()).collect::<Vec<_>>(),
        vec![second["id"].clone(), run["id"].clone()]
    );

    // The trail: the runs and the finding's life, by the checks' system actor.
    let entries = tenant.api.get(&format!("/v1/audit-log?resourceId={id}")).await.ok(200);
    let actions: Vec<&str> = data(&entries).iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"finding.opened") && actions.contains(&"finding.resolved"), "{actions:?}");
    let run_entries = tenant.api.get(&format!("/v1/audit-log?resourceId={}", str_of(&run, "id"))).await.ok(200);
    let actions: Vec<&str> = data(&run_entries).iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"check_run.queued") && actions.contains(&"check_run.finished"), "{actions:?}");

    // The connection's secret key is in nothing the API answers.
    for path in [
        format!("/v1/check-runs/{}", str_of(&run, "id")),
        format!("/v1/check-runs/{}/results?limit=1000", str_of(&run, "id")),
        "/v1/findings".to_owned(),
        "/v1/findings/export?format=csv".to_owned(),
        "/v1/check-runs/export?format=json".to_owned(),
        "/v1/audit-log?limit=1000".to_owned(),
    ] {
        let body = String::from_utf8_lossy(&tenant.api.get(&path).await.bytes).into_owned();
        assert!(!body.contains(SECRET_KEY), "{path} shows the secret key");
    }
}

async fn exceptions_roles_and_other_organizations(server: &TestServer, moto: &Moto) {
    console_users(moto, &[("dave", false)]);
    let tenant = server.tenant().await;
    let connection = connect_aws(&tenant.api).await;
    let run = run_checks(&tenant.api, &connection).await;
    let finding = findings(&tenant.api, &format!("checkId={CONSOLE_MFA}")).await.remove(0);
    let id = str_of(&finding, "id").to_owned();
    let exception = format!("/v1/findings/{id}/exception");
    let future = (time::OffsetDateTime::now_utc() + time::Duration::days(30)).format(&Rfc3339).unwrap();

    // Bad exceptions: 400 naming the field.
    for (body, field) in [
        (json!({"reason": " ", "expiresAt": "2099-01-01T00:00:00Z"}), "reason"),
        (json!({"reason": "ok", "expiresAt": "2020-01-01T00:00:00Z"}), "expiresAt"),
        (json!({"reason": "ok", "expiresAt": "2099-01-01T00:00:00Z"}), "expiresAt"),
        (json!({"reason": "ok"}), "expiresAt"),
    ] {
        let problem = tenant.api.post(&exception, body.clone()).await.problem(400);
        assert_eq!(problem["errors"][0]["field"], field, "{body}: {problem}");
    }

    // Roles: auditors read and may not accept; employees see nothing.
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    auditor.get(&format!("/v1/findings/{id}")).await.ok(200);
    auditor.get(&format!("/v1/check-runs/{}", str_of(&run, "id"))).await.ok(200);
    auditor.post(&exception, json!({"reason": "x", "expiresAt": future})).await.problem(403);
    auditor.post(&format!("/v1/integrations/connections/{connection}/checks/run"), json!({})).await.problem(403);
    let (employee, _) = server.member(&tenant, "employee").await;
    let employee = server.session(&employee.id, Some(&tenant.org_id)).await;
    employee.get("/v1/findings").await.problem(403);
    employee.get("/v1/check-runs").await.problem(403);

    // Another organization: every record of this one is missing, and its own lists are empty.
    let other = server.tenant().await;
    for path in [
        format!("/v1/findings/{id}"),
        format!("/v1/check-runs/{}", str_of(&run, "id")),
        format!("/v1/check-runs/{}/results", str_of(&run, "id")),
    ] {
        other.api.get(&path).await.problem(404);
    }
    other.api.post(&exception, json!({"reason": "x", "expiresAt": future})).await.problem(404);
    other.api.post(&format!("/v1/integrations/connections/{connection}/checks/run"), json!({})).await.problem(404);
    assert_eq!(other.api.get("/v1/findings").await.ok(200)["count"], 0);
    assert_eq!(other.api.get("/v1/check-runs").await.ok(200)["count"], 0);

    // Accepted: excepted until its end, and a run that fails the resource again keeps it so.
    let reason = "A break-glass user; its password is in the vault and MFA is on the vault.";
    let excepted = tenant.api.post(&exception, json!({"reason": reason, "expiresAt": future})).await;
    let excepted = excepted.ok(200);
    assert_eq!(excepted["status"], "excepted", "{excepted}");
    assert_eq!(excepted["exception"]["reason"], reason);
    assert_eq!(excepted["exception"]["grantedBy"], tenant.owner.id.as_str());
    run_checks(&tenant.api, &connection).await;
    let still = tenant.api.get(&format!("/v1/findings/{id}")).await.ok(200);
    assert_eq!(still["status"], "excepted", "{still}");
    assert_ne!(still["lastRunId"], finding["lastRunId"], "the run saw it again");

    // Runs of a disconnected connection are refused; runs without a check are refused.
    tenant.api.delete(&format!("/v1/integrations/connections/{connection}")).await.ok(200);
    let problem = tenant.api.post(&format!("/v1/integrations/connections/{connection}/checks/run"), json!({})).await;
    assert!(problem.problem(409)["detail"].as_str().unwrap().contains("disconnected"));
    tenant.api.get("/v1/check-runs?q=anything").await.problem(400);
}

pub(crate) async fn control_status(api: &Client, control: &str) -> Value {
    api.get(&format!("/v1/controls/{control}/status")).await.ok(200)
}

async fn a_control_linked_to_a_check_follows_its_runs(server: &TestServer, moto: &Moto) {
    console_users(moto, &[("erin", false)]);
    let tenant = server.tenant().await;
    let connection = connect_aws(&tenant.api).await;
    let control = tenant.api.post("/v1/controls", json!({"name": "MFA for console users"})).await.ok(201);
    let control = str_of(&control, "id").to_owned();
    let source = format!("{connection}:{CONSOLE_MFA}");
    let sources = format!("/v1/controls/{control}/evidence-sources");
    // A check of another provider, or an unknown one, is no source of this connection.
    for wrong in [format!("{connection}:github.repo.dependabot"), format!("{connection}:aws.iam.nothing")] {
        let problem = tenant.api.post(&sources, json!({"sourceId": wrong})).await.problem(400);
        assert_eq!(problem["errors"][0]["field"], "sourceId", "{problem}");
    }
    tenant.api.post(&sources, json!({"sourceId": source})).await.ok(201);

    // Failing: the run names the failing user.
    let run = run_checks(&tenant.api, &connection).await;
    let failing = control_status(&tenant.api, &control).await;
    assert_eq!(failing["status"], "failing", "{failing}");
    let evidence = data(&tenant.api.get(&format!("/v1/controls/{control}/evidence")).await.ok(200)).clone();
    assert_eq!(evidence[0]["kind"], "check", "{evidence:?}");
    assert_eq!(evidence[0]["detail"]["checkRunId"], run["id"]);
    assert_eq!(evidence[0]["detail"]["failing"], json!(["erin"]));

    // Excepted: the next run passes the control, and says which resource is excepted.
    let finding = findings(&tenant.api, &format!("checkId={CONSOLE_MFA}")).await.remove(0);
    let until = (time::OffsetDateTime::now_utc() + time::Duration::days(30)).format(&Rfc3339).unwrap();
    let body = json!({"reason": "erin leaves on Friday", "expiresAt": until});
    tenant.api.post(&format!("/v1/findings/{}/exception", str_of(&finding, "id")), body).await.ok(200);
    run_checks(&tenant.api, &connection).await;
    let excepted = control_status(&tenant.api, &control).await;
    assert_eq!(excepted["status"], "passing", "{excepted}");
    let evidence = data(&tenant.api.get(&format!("/v1/controls/{control}/evidence")).await.ok(200)).clone();
    assert_eq!(evidence[0]["detail"]["excepted"], json!(["erin"]), "{evidence:?}");

    // Fixed: passing on its own; the framework's assessment results show the check's observation.
    add_mfa(moto, "erin");
    run_checks(&tenant.api, &connection).await;
    let fixed = data(&tenant.api.get(&format!("/v1/controls/{control}/evidence")).await.ok(200)).clone();
    assert_eq!(fixed[0]["outcome"], "pass");
    assert_eq!(fixed[0]["detail"]["excepted"], json!([]), "{fixed:?}");
    assert_eq!(control_status(&tenant.api, &control).await["status"], "passing");
}

/// Two instances on one PostgreSQL database, both scheduling every 50 ms: each connection gets
/// exactly one scheduled run in the period, whichever instance queued and ran it.
#[tokio::test]
async fn two_instances_schedule_one_run_per_connection_and_period() {
    let moto = Arc::new(Moto::start().await);
    let env = vec![
        ("CHECKS_AWS_ENDPOINT_URL".to_owned(), moto.endpoint.clone()),
        ("CHECK_FREQUENCY_HOURS".to_owned(), "24".to_owned()),
        ("CHECK_POLL_MILLIS".to_owned(), "50".to_owned()),
    ];
    let sibling_env = env.clone();
    run_with_owned_env(Backend::Postgres, env, move |server| async move {
        let sibling = server.start_sibling(&sibling_env).await;
        let (ours, theirs) = (server.tenant().await, server.tenant().await);
        let key = server.admin().create_api_key(&theirs.org_id, &theirs.owner.id).await;
        let theirs_on_sibling = sibling.client(Auth::ApiKey(str_of(&key, "key").to_owned()), None);
        let connections =
            [(connect_aws(&ours.api).await, &ours.api), (connect_aws(&theirs_on_sibling).await, &theirs.api)];
        for (connection, api) in &connections {
            let scheduled = format!("/v1/check-runs?connectionId={connection}&trigger=scheduled");
            let deadline = Instant::now() + Duration::from_secs(60);
            let run = loop {
                let page = api.get(&scheduled).await.ok(200);
                if let Some(run) = data(&page).first() {
                    break run.clone();
                }
                assert!(Instant::now() < deadline, "no scheduled run of {connection} within a minute");
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            wait_done(api, str_of(&run, "id")).await;
        }
        // A run asked for through each instance, done: each instance's worker has ticked (and
        // scheduled) many times since the scheduled runs were queued.
        run_checks(&ours.api, &connections[0].0).await;
        run_checks(&theirs_on_sibling, &connections[1].0).await;
        for (connection, api) in &connections {
            let scheduled =
                api.get(&format!("/v1/check-runs?connectionId={connection}&trigger=scheduled")).await.ok(200);
            assert_eq!(scheduled["count"], 1, "one scheduled run per period: {scheduled}");
            let all = api.get(&format!("/v1/check-runs?connectionId={connection}")).await.ok(200);
            assert_eq!(all["count"], 2, "{all}");
        }
    })
    .await;
}
