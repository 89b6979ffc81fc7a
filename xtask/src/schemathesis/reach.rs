//! Which operations the contract run reached: read from the server's own request counters
//! (`/metrics`, `http_requests_total{route,method,status}`), not from schemathesis's reports, so
//! the count does not depend on how the tool describes its cases.
//!
//! An operation *reached its handler* when at least one of its requests got an answer other than
//! 401/403 (the credentials), 404 (no such route or no such record: the data the handler needs
//! was missing), 405 or 429: then the handler ran, and the run's checks said something about it.
//! A few operations cannot be reached in this run by their nature; they are listed in
//! [`UNREACHABLE`] with the reason, which docs/testing.md repeats, and the run fails when any
//! other operation was not reached.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Operations no request of the contract run can make succeed, and why (docs/testing.md).
pub const UNREACHABLE: &[(&str, &str)] = &[
    ("startSignIn", "no OpenID Connect provider is configured in the run: the sign-in routes answer 404"),
    ("finishSignIn", "no OpenID Connect provider is configured in the run: the sign-in routes answer 404"),
    ("signOut", "no OpenID Connect provider is configured in the run: the sign-in routes answer 404"),
    ("getConnection", "a connection is made only with credentials its provider verifies, and the run has no provider"),
    ("getCheckRun", "check runs are made only for connections, and the run has none"),
    ("getFinding", "findings are opened only by check runs, and the run has none"),
];

/// Answers that say nothing about the handler: credentials refused, no such record (or route),
/// method not allowed, rate limited.
const NOT_THE_HANDLER: [u16; 5] = [401, 403, 404, 405, 429];

/// `(method, route)` → status → count, from the Prometheus text of `/metrics`.
pub type Counts = BTreeMap<(String, String), BTreeMap<u16, u64>>;

/// Parses the `http_requests_total` series of a `/metrics` answer.
pub fn parse_metrics(text: &str) -> Result<Counts> {
    let mut counts = Counts::new();
    for line in text.lines().filter(|line| line.starts_with("http_requests_total{")) {
        let (labels, count) = line
            .strip_prefix("http_requests_total{")
            .and_then(|rest| rest.rsplit_once("} "))
            .with_context(|| format!("not a counter line: {line}"))?;
        let label = |name: &str| -> Result<String> {
            let start = labels.find(&format!("{name}=\"")).with_context(|| format!("no {name} in {line}"))?;
            let value = &labels[start + name.len() + 2..];
            let end = value.find('"').with_context(|| format!("unterminated {name} in {line}"))?;
            Ok(value[..end].to_owned())
        };
        let status: u16 = label("status")?.parse().with_context(|| format!("status of {line}"))?;
        let count: u64 = count.trim().parse().with_context(|| format!("count of {line}"))?;
        let key = (label("method")?.to_uppercase(), label("route")?);
        *counts.entry(key).or_default().entry(status).or_default() += count;
    }
    Ok(counts)
}

/// `after` less `before`: the requests made between two readings.
pub fn since(after: &Counts, before: &Counts) -> Counts {
    let mut counts = Counts::new();
    for (key, statuses) in after {
        for (status, count) in statuses {
            let earlier = before.get(key).and_then(|s| s.get(status)).copied().unwrap_or(0);
            if *count > earlier {
                counts.entry(key.clone()).or_default().insert(*status, count - earlier);
            }
        }
    }
    counts
}

/// What the run reached, per operation of the document.
pub struct Reach {
    /// Operation id → the statuses it was answered with (empty when never called).
    pub operations: BTreeMap<String, BTreeMap<u16, u64>>,
}

impl Reach {
    pub fn new(document: &Value, counts: &Counts) -> Result<Self> {
        let paths = document["paths"].as_object().context("the document has no paths")?;
        let mut operations = BTreeMap::new();
        for (path, item) in paths {
            let Some(item) = item.as_object() else { continue };
            for (method, operation) in item {
                let Some(id) = operation["operationId"].as_str() else { continue };
                let statuses = counts.get(&(method.to_uppercase(), path.clone())).cloned().unwrap_or_default();
                operations.insert(id.to_owned(), statuses);
            }
        }
        Ok(Self { operations })
    }

    /// Operations answered at least once with a status that only their handler gives.
    pub fn reached(&self) -> BTreeSet<&str> {
        self.operations
            .iter()
            .filter(|(_, statuses)| statuses.keys().any(|status| !NOT_THE_HANDLER.contains(status)))
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// Prints the count and fails when an operation outside [`UNREACHABLE`] was not reached.
    pub fn check(&self) -> Result<()> {
        let reached = self.reached();
        let total = self.operations.len();
        println!(
            "schemathesis reached the handlers of {} of {total} operations (an answer other than 401, 403, 404, 405, 429)",
            reached.len()
        );
        let listed: BTreeSet<&str> = UNREACHABLE.iter().map(|(id, _)| *id).collect();
        let mut missed = Vec::new();
        for (id, statuses) in &self.operations {
            if reached.contains(id.as_str()) {
                if listed.contains(id.as_str()) {
                    println!("  note: {id} is listed as unreachable but was reached: the list can shrink");
                }
                continue;
            }
            let answers: Vec<String> = statuses.iter().map(|(status, count)| format!("{status}×{count}")).collect();
            let answers = if answers.is_empty() { "never called".to_owned() } else { answers.join(", ") };
            if listed.contains(id.as_str()) {
                println!("  not reached, as listed: {id} ({answers})");
            } else {
                println!("  NOT REACHED: {id} ({answers})");
                missed.push(id.as_str());
            }
        }
        if !missed.is_empty() {
            bail!(
                "{} operations never reached their handler and are not listed in xtask/src/schemathesis/reach.rs \
                 UNREACHABLE: {}",
                missed.len(),
                missed.join(", ")
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const METRICS: &str = "# HELP http_requests_total Requests answered.\n\
        # TYPE http_requests_total counter\n\
        http_requests_total{route=\"/v1/risks\",method=\"GET\",status=\"200\"} 3\n\
        http_requests_total{route=\"/v1/risks\",method=\"GET\",status=\"401\"} 2\n\
        http_requests_total{route=\"/v1/risks\",method=\"POST\",status=\"404\"} 4\n\
        http_requests_total{route=\"/v1/risks/{id}\",method=\"PATCH\",status=\"403\"} 5\n\
        http_request_duration_seconds_count{route=\"/v1/risks\",method=\"GET\",status=\"200\"} 3\n";

    fn document() -> Value {
        json!({"paths": {
            "/v1/risks": {"get": {"operationId": "listRisks"}, "post": {"operationId": "createRisk"}},
            "/v1/risks/{id}": {"patch": {"operationId": "updateRisk"}, "parameters": []},
        }})
    }

    #[test]
    fn counts_statuses_per_route_and_method() -> Result<()> {
        let counts = parse_metrics(METRICS)?;
        assert_eq!(counts[&("GET".to_owned(), "/v1/risks".to_owned())], BTreeMap::from([(200, 3), (401, 2)]));
        assert_eq!(counts.len(), 3, "the duration series are not counted: {counts:?}");
        Ok(())
    }

    #[test]
    fn an_operation_answered_only_401_403_or_404_was_not_reached() -> Result<()> {
        let reach = Reach::new(&document(), &parse_metrics(METRICS)?)?;
        assert_eq!(reach.reached(), BTreeSet::from(["listRisks"]));
        let error = reach.check().expect_err("createRisk and updateRisk were not reached");
        assert!(error.to_string().contains("createRisk, updateRisk"), "{error}");
        Ok(())
    }

    #[test]
    fn a_refused_input_or_a_conflict_reached_the_handler() -> Result<()> {
        let metrics = "http_requests_total{route=\"/v1/risks/{id}\",method=\"PATCH\",status=\"409\"} 1\n";
        let reach = Reach::new(&document(), &parse_metrics(metrics)?)?;
        assert_eq!(reach.reached(), BTreeSet::from(["updateRisk"]));
        Ok(())
    }

    #[test]
    fn requests_before_the_run_are_left_out() -> Result<()> {
        let before = parse_metrics("http_requests_total{route=\"/v1/risks\",method=\"GET\",status=\"200\"} 3\n")?;
        let reach = Reach::new(&document(), &since(&parse_metrics(METRICS)?, &before))?;
        assert!(reach.reached().is_empty(), "the 200s were all before the run");
        Ok(())
    }
}
