//! `GET <list>/export?format=csv|json` (docs/api.md, "Exports"): every row of a list as one CSV
//! (RFC 4180, header row, formula cells neutralised) or JSON Lines file, parsed back here with a
//! CSV reader; the caller's organization only; and a large export that streams in constant memory.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::checks::{data, ids, str_of};
use crate::client::{Client, Response};
use crate::harness::TestServer;
use crate::{comments, context, policies, risks, tasks, vendors};

api_tests!(
    a_csv_export_parses_back_with_its_quotes_newlines_and_formula_cells,
    a_json_lines_export_holds_each_record_as_it_reads,
    a_bad_format_is_a_400_naming_format,
    every_list_exports_its_wire_fields,
    an_export_holds_the_callers_organization_only,
    a_large_export_streams_in_constant_memory,
);

/// The risks export's columns, in order (docs/api.md lists them).
const RISK_COLUMNS: [&str; 16] = [
    "id",
    "title",
    "description",
    "category",
    "department",
    "status",
    "likelihood",
    "impact",
    "residualLikelihood",
    "residualImpact",
    "treatmentStrategy",
    "treatmentStrategyDescription",
    "assigneeId",
    "organizationId",
    "createdAt",
    "updatedAt",
];

/// The export at `path`, asserting a 200 attachment of the format's media type.
async fn export(client: &Client, path: &str, format: &str) -> Response {
    let separator = if path.contains('?') { '&' } else { '?' };
    let answer = client.get(&format!("{path}{separator}format={format}")).await;
    assert_eq!(answer.status, 200, "{path} as {format}: {}", answer.body);
    let media = if format == "csv" { "text/csv" } else { "application/x-ndjson" };
    assert!(answer.content_type.starts_with(media), "{path}: Content-Type {}", answer.content_type);
    let disposition = answer.content_disposition.clone().unwrap_or_default();
    assert!(disposition.starts_with("attachment"), "{path}: Content-Disposition {disposition:?}");
    answer
}

/// The header and records of a CSV body, read with a CSV reader (RFC 4180 quoting).
fn csv_records(bytes: &[u8]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(bytes);
    let header = reader.headers().expect("a header row").iter().map(str::to_owned).collect();
    let records = reader
        .records()
        .map(|record| record.expect("a well-formed CSV record").iter().map(str::to_owned).collect())
        .collect();
    (header, records)
}

/// Each line of a JSON Lines body, parsed.
fn json_lines(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'), "the last line ends with a newline");
    text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect()
}

fn column(header: &[String], name: &str) -> usize {
    header.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

async fn a_csv_export_parses_back_with_its_quotes_newlines_and_formula_cells(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    // (title as created, the cell a spreadsheet must get)
    let titles = [
        ("Comma, \"quoted\" and\nnewline", "Comma, \"quoted\" and\nnewline"),
        ("=HYPERLINK(\"http://evil\")", "'=HYPERLINK(\"http://evil\")"),
        ("+1 555", "'+1 555"),
        ("-2 days", "'-2 days"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tTabbed", "'\tTabbed"),
        ("Ünïcode ✓ 漢字", "Ünïcode ✓ 漢字"),
        ("Plain = fine", "Plain = fine"),
    ];
    for (title, _) in &titles {
        risks::create(api, title).await;
    }
    let listed = api.get("/v1/risks").await.ok(200);

    let answer = export(api, "/v1/risks/export", "csv").await;
    assert!(answer.content_disposition.as_deref().unwrap_or_default().contains("risks.csv"));
    assert!(String::from_utf8(answer.bytes.clone()).is_ok(), "UTF-8");
    let (header, records) = csv_records(&answer.bytes);
    assert_eq!(header, RISK_COLUMNS, "the documented columns, in order");
    assert_eq!(records.len(), titles.len());
    let (id, title, org) = (column(&header, "id"), column(&header, "title"), column(&header, "organizationId"));
    let exported: Vec<&str> = records.iter().map(|r| r[id].as_str()).collect();
    assert_eq!(exported, ids(&listed), "the list's rows in the list's order");
    let mut cells: Vec<&str> = records.iter().map(|r| r[title].as_str()).collect();
    let mut expected: Vec<&str> = titles.iter().map(|(_, cell)| *cell).collect();
    cells.sort_unstable();
    expected.sort_unstable();
    assert_eq!(cells, expected, "quotes, commas and newlines survive; formulas are neutralised");
    assert!(records.iter().all(|r| r[org] == tenant.org_id));
    // The file is RFC 4180: records end with CRLF.
    assert!(answer.bytes.ends_with(b"\r\n"));
}

async fn a_json_lines_export_holds_each_record_as_it_reads(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    for title in ["=1+2", "Second, with \"quotes\"\nand a newline", "Third"] {
        risks::create(api, title).await;
    }
    let listed = api.get("/v1/risks").await.ok(200);
    let answer = export(api, "/v1/risks/export", "json").await;
    assert!(answer.content_disposition.as_deref().unwrap_or_default().contains("risks.jsonl"));
    let lines = json_lines(&answer.bytes);
    assert_eq!(lines.iter().map(|l| str_of(l, "id")).collect::<Vec<_>>(), ids(&listed));
    for line in &lines {
        // JSON needs no neutralising: each line is the record exactly as GET shows it.
        let read = api.get(&format!("/v1/risks/{}", str_of(line, "id"))).await.ok(200);
        assert_eq!(line, &read);
        let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.into_iter().collect::<BTreeSet<_>>(), RISK_COLUMNS.into_iter().collect());
    }
    // An empty list is an empty file (CSV: the header row only).
    let other = server.tenant().await;
    assert!(export(&other.api, "/v1/risks/export", "json").await.bytes.is_empty());
    let (header, records) = csv_records(&export(&other.api, "/v1/risks/export", "csv").await.bytes);
    assert_eq!((header.len(), records.len()), (RISK_COLUMNS.len(), 0));
}

async fn a_bad_format_is_a_400_naming_format(server: &TestServer) {
    let tenant = server.tenant().await;
    for path in ["/v1/risks/export", "/v1/vendors/export", "/v1/people/export", "/v1/tasks/export"] {
        for format in ["xlsx", "CSV", ""] {
            tenant.api.get(&format!("{path}?format={format}")).await.invalid("format");
        }
    }
    // Without `format`, CSV.
    let answer = tenant.api.get("/v1/risks/export").await;
    assert!(answer.content_type.starts_with("text/csv"), "{}", answer.content_type);
}

/// For each list: the CSV header holds every field a list item has, and both formats hold the
/// list's rows in its order.
async fn every_list_exports_its_wire_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let vendor = vendors::create(api, "=Vendor, Inc.").await;
    policies::create(api, "Access").await;
    context::create(api, "Who has access?").await;
    tasks::create(api, "Review").await;
    risks::create(api, "Theft").await;
    let vendor_id = str_of(&vendor, "id");
    comments::create(&tenant, "vendor", vendor_id, "Looks fine,\n\"really\"").await;
    let comments_list = format!("/v1/comments?entityType=vendor&entityId={vendor_id}");
    let comments_export = format!("/v1/comments/export?entityType=vendor&entityId={vendor_id}");
    let lists = [
        ("/v1/risks".to_owned(), "/v1/risks/export".to_owned()),
        ("/v1/vendors".to_owned(), "/v1/vendors/export".to_owned()),
        ("/v1/policies".to_owned(), "/v1/policies/export".to_owned()),
        ("/v1/context".to_owned(), "/v1/context/export".to_owned()),
        ("/v1/tasks".to_owned(), "/v1/tasks/export".to_owned()),
        ("/v1/people".to_owned(), "/v1/people/export".to_owned()),
        (comments_list, comments_export),
    ];
    for (list_path, export_path) in &lists {
        let list = api.get(list_path).await.ok(200);
        // Comments are a bare array.
        let items: Vec<Value> = list.as_array().cloned().unwrap_or_else(|| data(&list).to_vec());
        assert!(!items.is_empty(), "{list_path}");
        let (header, records) = csv_records(&export(api, export_path, "csv").await.bytes);
        for key in items[0].as_object().unwrap().keys() {
            assert!(header.contains(key), "{export_path}: no column {key} in {header:?}");
        }
        let id = column(&header, "id");
        let listed: Vec<&str> = items.iter().map(|item| str_of(item, "id")).collect();
        assert_eq!(records.iter().map(|r| r[id].as_str()).collect::<Vec<_>>(), listed, "{export_path}");
        let lines = json_lines(&export(api, export_path, "json").await.bytes);
        assert_eq!(lines.iter().map(|l| str_of(l, "id")).collect::<Vec<_>>(), listed, "{export_path}");
    }
    // Nested values are their JSON text; a formula-like text is neutralised wherever it is.
    let (header, records) = csv_records(&export(api, "/v1/vendors/export", "csv").await.bytes);
    assert_eq!(records[0][column(&header, "name")], "'=Vendor, Inc.");
    let (header, records) = csv_records(&export(api, "/v1/people/export", "csv").await.bytes);
    let user: Value = serde_json::from_str(&records[0][column(&header, "user")]).expect("`user` as JSON text");
    assert_eq!(user["id"], tenant.owner.id.as_str());
    let (header, records) = csv_records(&export(api, &lists[6].1, "csv").await.bytes);
    assert_eq!(records[0][column(&header, "content")], "Looks fine,\n\"really\"");
    let author: Value = serde_json::from_str(&records[0][column(&header, "author")]).expect("`author` as JSON");
    assert_eq!(author["id"], tenant.owner.id.as_str());
    // Connections (none here: making one needs a provider, tests/api/integrations.rs): the header.
    let (header, records) = csv_records(&export(api, "/v1/integrations/connections/export", "csv").await.bytes);
    assert_eq!((header[0].as_str(), header.contains(&"providerSlug".to_owned()), records.len()), ("id", true, 0));
    // A comments export names its record, as the list does.
    api.get("/v1/comments/export?entityType=vendor").await.invalid("entityId");
}

async fn an_export_holds_the_callers_organization_only(server: &TestServer) {
    let (mine, theirs) = (server.tenant().await, server.tenant().await);
    risks::create(&mine.api, "Mine").await;
    risks::create(&theirs.api, "Theirs").await;
    for (tenant, title) in [(&mine, "Mine"), (&theirs, "Theirs")] {
        let lines = json_lines(&export(&tenant.api, "/v1/risks/export", "json").await.bytes);
        assert_eq!(lines.len(), 1);
        assert_eq!(
            (lines[0]["title"].as_str(), lines[0]["organizationId"].as_str()),
            (Some(title), Some(&*tenant.org_id))
        );
    }
    // Naming the other organization with a session the caller has no membership in is refused.
    let stranger = mine.session.with_org(Some(&theirs.org_id));
    let answer = stranger.get("/v1/risks/export").await;
    assert!(matches!(answer.status, 401 | 403 | 404), "{}: {}", answer.status, answer.body);
    assert!(!String::from_utf8_lossy(&answer.bytes).contains("Theirs"));
}

/// Rows of the large export, and the bytes of each row's description: 20,000 × ~1.2 KB makes a
/// file of ~24 MiB, which the server would have to hold (in rows, JSON and CSV, so several times
/// over) if it did not stream.
const LARGE_ROWS: usize = 20_000;
const DESCRIPTION_BYTES: usize = 1_000;
/// How much the server's resident memory may grow while it streams them, over what a small export
/// left it at. One batch (500 rows) as rows, JSON values and CSV is ~2 MiB; SQLite's reader
/// connections each keep a page cache of up to 2 MiB (4 readers), which a first full scan fills;
/// the allocator keeps some slack. 12 MiB is half the file: holding it would cross the bound.
const RSS_GROWTH_BOUND_KIB: u64 = 12 * 1024;

async fn a_large_export_streams_in_constant_memory(server: &TestServer) {
    let tenant = server.tenant().await;
    risks::create(&tenant.api, "Made through the API").await;
    let filler = "x".repeat(DESCRIPTION_BYTES);
    let org = &tenant.org_id;
    let columns = "id, organization_id, title, description, category, status, likelihood, impact, \
                   residual_likelihood, residual_impact, treatment_strategy, created_at, updated_at";
    let values = "'open', 'possible', 'moderate', 'unlikely', 'minor', 'mitigate'";
    server
        .execute_sql_per_backend(
            &format!(
                "INSERT INTO risks ({columns}) SELECT 'rsk_' || lpad(to_hex(n), 32, '0'), '{org}', \
                 '=Risk ' || n || ', \"quoted\"', '{filler}' || n, 'technology', {values}, \
                 now() - n * interval '1 millisecond', now() FROM generate_series(1, {LARGE_ROWS}) n"
            ),
            &format!(
                "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {LARGE_ROWS}) \
                 INSERT INTO risks ({columns}) SELECT 'rsk_' || printf('%032x', n), '{org}', \
                 '=Risk ' || n || ', \"quoted\"', '{filler}' || n, 'technology', {values}, \
                 strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (n / 1000.0) || ' seconds'), \
                 strftime('%Y-%m-%d %H:%M:%f', 'now') FROM r"
            ),
        )
        .await;

    // A page of a thousand first: pools, caches and the allocator settle at what a batch needs.
    tenant.api.get("/v1/risks?limit=1000").await.ok(200);
    let baseline = rss_kib(server.pid());

    let mut response = tenant.api.get_streamed("/v1/risks/export?format=csv").await;
    assert_eq!(response.status(), 200);
    let (mut body, mut peak, mut chunks) = (Vec::new(), baseline, 0u64);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while let Some(chunk) = tokio::time::timeout_at(deadline, response.chunk()).await.expect("the export ends").unwrap()
    {
        body.extend_from_slice(&chunk);
        chunks += 1;
        if chunks % 8 == 0 {
            peak = peak.max(rss_kib(server.pid()));
        }
    }
    peak = peak.max(rss_kib(server.pid()));
    let (header, records) = csv_records(&body);
    assert_eq!(records.len(), LARGE_ROWS + 1, "every row");
    let title = column(&header, "title");
    let seeded = records.iter().filter(|r| r[title].starts_with("'=Risk ") && r[title].ends_with(", \"quoted\""));
    assert_eq!(seeded.count(), LARGE_ROWS, "each seeded title neutralised and quoted");
    assert!(body.len() > 20 * 1024 * 1024, "a file of {} bytes", body.len());
    let growth = peak.saturating_sub(baseline);
    eprintln!("RSS {baseline} KiB before, {peak} KiB at most while exporting {} bytes", body.len());
    assert!(
        growth <= RSS_GROWTH_BOUND_KIB,
        "RSS grew by {growth} KiB (from {baseline} to {peak} KiB) while exporting {} bytes",
        body.len()
    );
}

/// `VmRSS` of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB")
}
