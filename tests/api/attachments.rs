//! Comment attachments: validation, refused executables, exact size limits, signed download URLs,
//! and all-or-nothing storage in the filesystem blob store (`BLOB_DIR/ORG_ID/ATTACHMENT_ID`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::checks::{assert_id, assert_timestamp, base64, str_of};
use crate::comments::{self, body, list, with};
use crate::harness::{Env, TestServer, poll_until};
use crate::tenant::Tenant;

api_tests!(
    attachments_round_trip_through_a_signed_url,
    tampered_download_urls_are_403,
    expired_download_urls_are_403 with SHORT_URLS,
    attachment_fields_are_validated,
    executables_and_scripts_are_refused_naming_the_file,
    size_limits_are_exact with SMALL_LIMITS,
    files_over_the_json_body_limit_are_accepted,
    a_failing_blob_store_is_503_and_leaves_nothing,
    deleting_a_comment_removes_its_files,
);

const SHORT_URLS: Env = &[("DOWNLOAD_URL_TTL_SECONDS", "1")];
const SMALL_LIMITS: Env = &[("ATTACHMENT_MAX_FILE_BYTES", "1024"), ("ATTACHMENT_MAX_REQUEST_BYTES", "2048")];

/// An attachment of a POST /v1/comments body.
pub fn file(name: &str, media_type: &str, bytes: &[u8]) -> Value {
    json!({"fileName": name, "fileType": media_type, "fileData": base64(bytes)})
}

/// Where the filesystem blob store keeps an attachment of `tenant`, relative to `BLOB_DIR`.
pub fn blob_key(tenant: &Tenant, attachment_id: &str) -> String {
    format!("{}/{attachment_id}", tenant.org_id)
}

/// Bytes that survive no text re-encoding: every byte value, `len` bytes in all.
fn binary(len: usize) -> Vec<u8> {
    (0..len).map(|i| u8::try_from(i % 256).unwrap_or_default()).collect()
}

/// Posts a comment with `files` through the tenant's API key as its owner.
async fn post(tenant: &Tenant, entity_type: &str, entity_id: &str, files: Vec<Value>) -> crate::client::Response {
    let body = with(body(entity_type, entity_id, "see attached"), "attachments", Value::Array(files));
    tenant.api.post("/v1/comments", with(body, "userId", json!(tenant.owner.id))).await
}

/// The id of the attachment named `name` of `comment`.
#[track_caller]
pub fn attachment_id(comment: &Value, name: &str) -> String {
    let attachments = comment["attachments"].as_array().unwrap_or_else(|| panic!("no attachments in {comment}"));
    let found = attachments.iter().find(|a| a["name"] == name).unwrap_or_else(|| panic!("no {name} in {comment}"));
    str_of(found, "id").to_owned()
}

/// `GET /v1/attachments/{id}/download` through the tenant's API key: the signed URL.
async fn download_url(tenant: &Tenant, attachment_id: &str) -> String {
    let answer = tenant.api.get(&format!("/v1/attachments/{attachment_id}/download")).await.ok(200);
    str_of(&answer, "downloadUrl").to_owned()
}

async fn attachments_round_trip_through_a_signed_url(server: &TestServer) {
    let tenant = server.tenant().await;
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let risk = comments::entity(&tenant.api, "risk").await;
    let pdf = binary(3000);
    let png = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff];
    let mut described = file("chart.png", "image/png", &png);
    described["description"] = json!("d".repeat(500));
    described["userId"] = json!(auditor.id);
    let comment = post(&tenant, "risk", &risk, vec![file("Report (final).pdf", "application/pdf", &pdf), described])
        .await
        .ok(201);
    comments::assert_comment(&comment, "see attached", &tenant.owner);

    let attachments = comment["attachments"].as_array().expect("attachments").clone();
    assert_eq!(attachments.len(), 2, "{comment}");
    let mut by_name = std::collections::BTreeMap::new();
    for attachment in &attachments {
        let keys: Vec<&String> = attachment.as_object().expect("an object").keys().collect();
        let mut keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["createdAt", "id", "name", "type"], "only metadata: {attachment}");
        assert_id(&attachment["id"], "att_");
        assert_timestamp(&attachment["createdAt"]);
        by_name.insert(str_of(attachment, "name").to_owned(), attachment.clone());
    }
    assert_eq!(by_name["Report (final).pdf"]["type"], "application/pdf");
    assert_eq!(by_name["chart.png"]["type"], "image/png");
    assert_eq!(list(&tenant.session, "risk", &risk).await, std::slice::from_ref(&comment));

    for (name, bytes, media_type) in [("Report (final).pdf", &pdf, "application/pdf"), ("chart.png", &png, "image/png")]
    {
        let id = str_of(&by_name[name], "id");
        let stored = std::fs::read(server.blob_dir().join(blob_key(&tenant, id))).expect("the blob file");
        assert_eq!(&stored, bytes, "BLOB_DIR/{}", blob_key(&tenant, id));

        let path = format!("/v1/attachments/{id}/download");
        server.anonymous().get(&path).await.problem(401);
        for client in [&tenant.api, &tenant.session] {
            let answer = client.get(&path).await.ok(200);
            assert_eq!(answer["expiresIn"], 900, "{answer}");
            let url = str_of(&answer, "downloadUrl");
            let prefix = format!("{}/v1/attachments/{id}/content?", server.base_url());
            assert!(url.starts_with(&prefix), "{url} does not start with {prefix}");
            let fetched = server.anonymous().get_url(url).await;
            assert_eq!(fetched.status, 200, "GET {url}: {}", fetched.body);
            assert_eq!(&fetched.bytes, bytes, "GET {url}: not the uploaded bytes");
            assert!(fetched.content_type.starts_with(media_type), "Content-Type {:?}", fetched.content_type);
            let disposition = fetched.content_disposition.clone().unwrap_or_default();
            assert!(disposition.starts_with("attachment"), "Content-Disposition {disposition:?}");
            // Opened in a browser anyway, a tenant's file runs in an opaque origin, not ours.
            assert_eq!(fetched.header("content-security-policy").as_deref(), Some("sandbox"), "GET {url}");
        }
    }
}

/// Changes the character at `index` of `text` to another lowercase hex digit.
fn flip_hex(text: &str, index: usize) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    chars[index] = if chars[index] == '0' { '1' } else { '0' };
    chars.into_iter().collect()
}

/// The value of query parameter `name` in `url`, and the byte range it occupies.
fn query_param(url: &str, name: &str) -> (String, std::ops::Range<usize>) {
    let query_start = url.find('?').unwrap_or_else(|| panic!("no query in {url}")) + 1;
    let mut offset = query_start;
    for pair in url[query_start..].split('&') {
        if let Some(value) = pair.strip_prefix(&format!("{name}=")) {
            let start = offset + name.len() + 1;
            return (value.to_owned(), start..start + value.len());
        }
        offset += pair.len() + 1;
    }
    panic!("no `{name}` parameter in {url}");
}

async fn tampered_download_urls_are_403(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = comments::entity(&tenant.api, "task").await;
    let files = vec![file("a.txt", "text/plain", b"first"), file("b.txt", "text/plain", b"second")];
    let comment = post(&tenant, "task", &task, files).await.ok(201);
    let first = attachment_id(&comment, "a.txt");
    let second = attachment_id(&comment, "b.txt");
    let url = download_url(&tenant, &first).await;
    let anonymous = server.anonymous();

    let (signature, range) = query_param(&url, "signature");
    assert!(!signature.is_empty() && signature.bytes().all(|b| b.is_ascii_hexdigit()), "signature {signature:?}");
    for index in [0, signature.len() / 2, signature.len() - 1] {
        let tampered = format!("{}{}{}", &url[..range.start], flip_hex(&signature, index), &url[range.end..]);
        anonymous.get_url(&tampered).await.problem(403);
    }
    let (expires, range) = query_param(&url, "expires");
    let later: u64 = expires.parse().unwrap_or_else(|_| panic!("expires {expires:?} is not a UNIX time"));
    for other in [later + 1, later + 3600, later - 1] {
        let tampered = format!("{}{other}{}", &url[..range.start], &url[range.end..]);
        anonymous.get_url(&tampered).await.problem(403);
    }
    let swapped = url.replacen(&first, &second, 1);
    anonymous.get_url(&swapped).await.problem(403);
    // The documented URL has no organization in it; if one is added, it must be signed too.
    if url.contains("org=") {
        let (org, range) = query_param(&url, "org");
        assert_eq!(org, tenant.org_id);
        let other = server.tenant().await;
        let moved = format!("{}{}{}", &url[..range.start], other.org_id, &url[range.end..]);
        anonymous.get_url(&moved).await.problem(403);
    }

    let fetched = anonymous.get_url(&url).await;
    assert_eq!((fetched.status, fetched.bytes.as_slice()), (200, b"first".as_slice()), "the genuine URL still works");
}

/// `DOWNLOAD_URL_TTL_SECONDS` reaches the links. When exactly a link expires is the use case's
/// to decide, tested with a fake clock (crates/app/tests/download_links.rs).
async fn expired_download_urls_are_403(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = comments::entity(&tenant.api, "task").await;
    let comment = post(&tenant, "task", &task, vec![file("a.txt", "text/plain", b"soon gone")]).await.ok(201);
    let id = str_of(&comment["attachments"][0], "id");
    let answer = tenant.api.get(&format!("/v1/attachments/{id}/download")).await.ok(200);
    assert_eq!(answer["expiresIn"], 1, "{answer}");
    let url = str_of(&answer, "downloadUrl");
    let expired = poll_until(Duration::from_secs(10), || async move {
        (server.anonymous().get_url(url).await.status == 403).then_some(())
    })
    .await
    .is_some();
    assert!(expired, "a link valid for 1 s still worked 10 s later");
    server.anonymous().get_url(url).await.problem(403);
    let fresh = download_url(&tenant, id).await;
    assert_eq!(server.anonymous().get_url(&fresh).await.bytes, b"soon gone", "a new URL works again");
}

async fn attachment_fields_are_validated(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor = comments::entity(&tenant.api, "vendor").await;
    let good = || file("notes.txt", "text/plain", b"fine");
    let set = |key: &str, value: Value| {
        let mut attachment = good();
        attachment[key] = value;
        attachment
    };
    let without = |key: &str| {
        let mut attachment = good();
        attachment.as_object_mut().expect("an object").remove(key);
        attachment
    };
    let cases = [
        set("fileData", json!("not base64!")),
        set("fileData", json!("@@@@")),
        set("fileData", json!("Zm9v\u{0}")),
        set("fileData", json!(5)),
        without("fileData"),
        set("fileName", json!("")),
        set("fileName", json!(format!("{}.txt", "n".repeat(252)))),
        set("fileName", json!("dir/notes.txt")),
        set("fileName", json!("dir\\notes.txt")),
        set("fileName", json!("no\ntes.txt")),
        set("fileName", json!("no\u{7}tes.txt")),
        without("fileName"),
        set("fileType", json!("text")),
        set("fileType", json!("")),
        set("fileType", json!(7)),
        without("fileType"),
        set("description", json!("d".repeat(501))),
    ];
    for attachment in cases {
        let what = attachment.to_string();
        let answer = post(&tenant, "vendor", &vendor, vec![good(), attachment]).await;
        let body = answer.invalid("attachments");
        assert!(body["errors"].is_array(), "{what}: {body}");
    }
    let not_a_list = with(body("vendor", &vendor, "x"), "attachments", json!(good()));
    tenant.api.post("/v1/comments", with(not_a_list, "userId", json!(tenant.owner.id))).await.invalid("attachments");
    assert!(list(&tenant.api, "vendor", &vendor).await.is_empty(), "no comment from a refused request");
    assert!(server.blob_files().is_empty(), "refused files were stored: {:?}", server.blob_files());

    let longest = format!("{}.txt", "n".repeat(251));
    let comment = post(&tenant, "vendor", &vendor, vec![set("fileName", json!(longest))]).await.ok(201);
    assert_eq!(comment["attachments"][0]["name"], longest.as_str());
    let empty = post(&tenant, "vendor", &vendor, vec![file("empty.txt", "text/plain", b"")]).await.ok(201);
    let url = download_url(&tenant, str_of(&empty["attachments"][0], "id")).await;
    let fetched = server.anonymous().get_url(&url).await;
    assert_eq!((fetched.status, fetched.bytes.len()), (200, 0), "an empty file round-trips");
}

async fn executables_and_scripts_are_refused_naming_the_file(server: &TestServer) {
    let tenant = server.tenant().await;
    let policy = comments::entity(&tenant.api, "policy").await;
    let refused = [
        ("setup.exe", "application/octet-stream"),
        ("install.sh", "text/plain"),
        ("widget.js", "text/plain"),
        ("library.dll", "application/octet-stream"),
        ("macro.ps1", "text/plain"),
        ("report.pdf", "application/x-msdownload"),
        ("notes.txt", "application/x-sh"),
        ("data.json", "application/javascript"),
        ("page.txt", "text/javascript"),
        ("firmware.bin", "application/octet-stream"),
        ("Setup.EXE", "application/octet-stream"),
    ];
    for (name, media_type) in refused {
        let files = vec![file("fine.txt", "text/plain", b"ok"), file(name, media_type, b"MZ")];
        let answer = post(&tenant, "policy", &policy, files).await.problem(400);
        assert!(answer.to_string().contains(name), "the 400 for {name} ({media_type}) does not name it: {answer}");
    }
    assert!(list(&tenant.api, "policy", &policy).await.is_empty(), "no comment from a refused request");
    assert!(server.blob_files().is_empty(), "refused files were stored: {:?}", server.blob_files());
    post(&tenant, "policy", &policy, vec![file("exe-notes.txt", "text/plain", b"about .exe files")]).await.ok(201);
}

async fn size_limits_are_exact(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = comments::entity(&tenant.api, "task").await;
    let sized = |name: &str, len: usize| file(name, "application/octet-stream", &binary(len));

    let one = post(&tenant, "task", &task, vec![sized("max.dat", 1024)]).await.ok(201);
    post(&tenant, "task", &task, vec![sized("over.dat", 1025)]).await.problem(413);
    post(&tenant, "task", &task, vec![sized("a.dat", 10), sized("over.dat", 1025)]).await.problem(413);
    let two = post(&tenant, "task", &task, vec![sized("a.dat", 1024), sized("b.dat", 1024)]).await.ok(201);
    let three = vec![sized("a.dat", 1024), sized("b.dat", 1024), sized("c.dat", 1)];
    post(&tenant, "task", &task, three).await.problem(413);
    let three = vec![sized("a.dat", 683), sized("b.dat", 683), sized("c.dat", 683)];
    post(&tenant, "task", &task, three).await.problem(413);
    let three = vec![sized("a.dat", 683), sized("b.dat", 683), sized("c.dat", 682)];
    let last = post(&tenant, "task", &task, three).await.ok(201);

    let comments = list(&tenant.api, "task", &task).await;
    let ids: Vec<&Value> = comments.iter().map(|c| &c["id"]).collect();
    assert_eq!(ids, [&last["id"], &two["id"], &one["id"]], "refused requests leave no comment");
    let mut expected: Vec<String> = [&one, &two, &last]
        .iter()
        .flat_map(|c| c["attachments"].as_array().expect("attachments").clone())
        .map(|a| blob_key(&tenant, str_of(&a, "id")))
        .collect();
    expected.sort();
    assert_eq!(server.blob_files(), expected, "refused requests leave no file");
    let url = download_url(&tenant, str_of(&one["attachments"][0], "id")).await;
    assert_eq!(server.anonymous().get_url(&url).await.bytes, binary(1024));
}

/// The default limits (10 MiB a file) raise the body limit of `POST /v1/comments` above the 1 MiB
/// of other JSON bodies.
async fn files_over_the_json_body_limit_are_accepted(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = comments::entity(&tenant.api, "risk").await;
    let bytes = binary(2 * 1024 * 1024 + 1);
    let comment = post(&tenant, "risk", &risk, vec![file("big.dat", "application/octet-stream", &bytes)]).await.ok(201);
    let url = download_url(&tenant, str_of(&comment["attachments"][0], "id")).await;
    let fetched = server.anonymous().get_url(&url).await;
    assert_eq!(fetched.status, 200);
    assert!(fetched.bytes == bytes, "the 2 MiB file did not round-trip ({} bytes back)", fetched.bytes.len());
}

async fn a_failing_blob_store_is_503_and_leaves_nothing(server: &TestServer) {
    let broken = server.tenant().await;
    let healthy = server.tenant().await;
    // A regular file where the organization's blob directory should go.
    std::fs::write(server.blob_dir().join(&broken.org_id), b"in the way").expect("block the org's directory");
    let before = server.blob_files();
    assert_eq!(before, std::slice::from_ref(&broken.org_id));

    let task = comments::entity(&broken.api, "task").await;
    let files = vec![file("a.txt", "text/plain", b"A"), file("b.txt", "text/plain", b"B")];
    let answer = post(&broken, "task", &task, files.clone()).await;
    let retry_after = answer.retry_after.clone();
    answer.problem(503);
    assert!(retry_after.is_some_and(|v| v.parse::<u32>().is_ok()), "503 without a numeric Retry-After");
    let session_body = with(body("task", &task, "via session"), "attachments", Value::Array(files.clone()));
    broken.session.post("/v1/comments", session_body).await.problem(503);

    assert!(list(&broken.api, "task", &task).await.is_empty(), "a comment exists although its files were not stored");
    assert_eq!(server.blob_files(), before, "files were left behind under BLOB_DIR");
    assert_eq!(std::fs::read(server.blob_dir().join(&broken.org_id)).expect("the blocking file"), b"in the way");

    let plain = comments::create(&broken, "task", &task, "no files, no blob store").await;
    assert_eq!(list(&broken.api, "task", &task).await, [plain]);

    let elsewhere = comments::entity(&healthy.api, "task").await;
    let comment = post(&healthy, "task", &elsewhere, files).await.ok(201);
    assert_eq!(server.blob_files().len(), 3, "{:?}", server.blob_files());
    let url = download_url(&healthy, &attachment_id(&comment, "a.txt")).await;
    assert_eq!(server.anonymous().get_url(&url).await.bytes, b"A");
}

async fn deleting_a_comment_removes_its_files(server: &TestServer) {
    let tenant = server.tenant().await;
    let vendor = comments::entity(&tenant.api, "vendor").await;
    let files = vec![file("a.txt", "text/plain", b"A"), file("b.txt", "text/plain", b"B")];
    let doomed = post(&tenant, "vendor", &vendor, files).await.ok(201);
    let kept = post(&tenant, "vendor", &vendor, vec![file("c.txt", "text/plain", b"C")]).await.ok(201);
    let keys = |comment: &Value| -> Vec<String> {
        let attachments = comment["attachments"].as_array().expect("attachments").clone();
        attachments.iter().map(|a| blob_key(&tenant, str_of(a, "id"))).collect()
    };
    let mut all = [keys(&doomed), keys(&kept)].concat();
    all.sort();
    assert_eq!(server.blob_files(), all);
    let doomed_id = str_of(&doomed["attachments"][0], "id").to_owned();
    let url = download_url(&tenant, &doomed_id).await;

    tenant.api.delete(&format!("/v1/comments/{}", str_of(&doomed, "id"))).await.ok(200);
    let kept_keys = keys(&kept);
    assert!(
        crate::checks::eventually(|| server.blob_files() == kept_keys).await,
        "BLOB_DIR after deleting the comment: {:?}, expected {kept_keys:?}",
        server.blob_files()
    );
    tenant.api.get(&format!("/v1/attachments/{doomed_id}/download")).await.problem(404);
    let stale = server.anonymous().get_url(&url).await;
    assert!(stale.status == 404 || stale.status == 403, "a deleted attachment is still served: {}", stale.status);
    let url = download_url(&tenant, str_of(&kept["attachments"][0], "id")).await;
    assert_eq!(server.anonymous().get_url(&url).await.bytes, b"C");
}
