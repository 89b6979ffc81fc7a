//! The adoption case: [`ORGANIZATIONS`] fresh organizations each adopt SOC 2 with the control
//! library, then ISO 27001, through `POST /v1/framework-templates/{key}/adopt` with `{}` (controls,
//! policies and tasks). SOC 2 on an empty organization makes every record in one transaction, with
//! an audit entry each; ISO after it mostly reuses SOC 2's controls and adds mappings.
//!
//! What it measures: each adoption's wall time from request sent to answer read, and the server's
//! peak resident set over all of them beside its idle one (the organizations made, no adoption
//! yet). The goals, reported but not targets (a miss does not fail the bench): each adoption under
//! [`ADOPTION_GOAL_MS`], peak at most [`RSS_ABOVE_IDLE_GOAL_MIB`] above idle.
//!
//! The organizations are made through the API by one user's session (an organization may adopt a
//! template once), and the adoptions are that session's with `X-Organization-Id`.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use super::Backend;
use super::measure::{reset_peak, rss_mib};
use super::report::Check;
use crate::service::{Request, Server, Store, admin, json_string};

/// The case's name, as `--case` selects it.
pub const NAME: &str = "framework adoption";
pub const ORGANIZATIONS: usize = 20;
/// Adopted in this order by every organization: the second reuses what the first made.
const SOC2: &str = "soc2-2017";
const ISO: &str = "iso27001-2022";
pub const ADOPTION_GOAL_MS: f64 = 1_000.0;
pub const RSS_ABOVE_IDLE_GOAL_MIB: f64 = 20.0;
const POLL: Duration = Duration::from_millis(50);
/// Before the idle reading, as for the fixtures: the start-up's and set-up's work done.
const SETTLE: Duration = Duration::from_secs(1);

/// One backend's figures.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub backend: Backend,
    pub organizations: usize,
    pub soc2: Timings,
    /// ISO 27001 in the organizations that adopted SOC 2 just before.
    pub iso: Timings,
    /// What the first organization's adoptions made and reused (every other's must match).
    pub soc2_made: Made,
    pub iso_made: Made,
    pub idle_rss_mib: f64,
    pub peak_rss_mib: f64,
    pub rss_above_idle_mib: f64,
    /// Whether each goal held; not among the bench's targets.
    pub goals: Vec<Check>,
    /// An organization whose adoption made something else, a peak that could not be reset.
    pub problems: Vec<String>,
}

/// Wall times of one template's adoptions, in milliseconds.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub min_ms: f64,
    pub median_ms: f64,
    pub max_ms: f64,
    /// Every adoption's, in the organizations' order.
    pub runs_ms: Vec<f64>,
}

impl Timings {
    fn of(runs_ms: Vec<f64>) -> Self {
        let mut sorted = runs_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let median_ms = match sorted.len() {
            0 => 0.0,
            n if n % 2 == 0 => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
            n => sorted[n / 2],
        };
        let min_ms = sorted.first().copied().unwrap_or_default();
        let max_ms = sorted.last().copied().unwrap_or_default();
        Timings { min_ms, median_ms, max_ms, runs_ms }
    }

    fn summary(&self) -> String {
        format!("{:.0}/{:.0}/{:.0}", self.min_ms, self.median_ms, self.max_ms)
    }
}

/// What one adoption's answer says it made (`library.created`) and reused (`library.reused`).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Made {
    pub controls: usize,
    pub policies: usize,
    pub tasks: usize,
    pub mappings: u64,
    pub evidence_sources: u64,
    pub reused_controls: usize,
}

impl Made {
    fn parse(body: &str) -> Result<Self> {
        let answer: serde_json::Value =
            serde_json::from_str(body).with_context(|| format!("the adoption's answer is not JSON: {body:.500}"))?;
        let library = &answer["library"];
        let count = |list: &serde_json::Value| list.as_array().map_or(0, Vec::len);
        let created = &library["created"];
        Ok(Made {
            controls: count(&created["controls"]),
            policies: count(&created["policies"]),
            tasks: count(&created["tasks"]),
            mappings: created["mappings"].as_u64().context("no library.created.mappings")?,
            evidence_sources: created["evidenceSources"].as_u64().context("no library.created.evidenceSources")?,
            reused_controls: count(&library["reused"]["controls"]),
        })
    }

    fn summary(&self) -> String {
        format!(
            "{} controls, {} policies, {} tasks, {} mappings, {} evidence links made; {} controls reused",
            self.controls, self.policies, self.tasks, self.mappings, self.evidence_sources, self.reused_controls
        )
    }
}

/// The case on `store`, a database of its own, with a server of its own (so that its idle and
/// peak RSS are the adoptions', not earlier cases').
pub fn run(binary: &Path, backend: Backend, store: &Store, scratch: &Path, out: &Path) -> Result<Figures> {
    let name = backend.name();
    println!("\n==> {NAME}: {ORGANIZATIONS} organizations adopt {SOC2}, then {ISO} ({name})");
    let log = out.join(format!("{name}-adoption-server.log"));
    let data = scratch.join(format!("adoption-{name}"));
    fs::create_dir_all(data.join("blobs")).with_context(|| format!("cannot create {}", data.display()))?;
    let mut server = Server::spawn(binary, store.url(), &data, &log, &[])?;
    server.wait_until_ok(&Request::get("/health"), POLL, &log)?;
    let user = admin(binary, store.url(), &["create-user", "--email", "owner@adoption.test", "--name", "Owner"])?;
    let session = admin(binary, store.url(), &["create-session", "--user", &json_string(&user, "id")?])?;
    let session = json_string(&session, "token")?;
    let organizations = (1..=ORGANIZATIONS)
        .map(|n| {
            let body = serde_json::json!({ "name": format!("Adoption {n}") }).to_string();
            let made = Request::post("/v1/organizations", &body).with_session(&session).expect(&server.address, 201)?;
            json_string(&made, "id")
        })
        .collect::<Result<Vec<_>>>()?;

    std::thread::sleep(SETTLE);
    let (idle_rss_mib, _) = rss_mib(server.pid())?;
    let mut problems = Vec::new();
    if let Err(error) = reset_peak(server.pid()) {
        problems.push(format!("could not reset the peak RSS ({error:#}): it is the peak since start"));
    }
    let (mut soc2, mut iso) = (Adoptions::new(SOC2), Adoptions::new(ISO));
    for organization in &organizations {
        soc2.adopt(&server, &session, organization, &mut problems)?;
        iso.adopt(&server, &session, organization, &mut problems)?;
    }
    let (_, peak_rss_mib) = rss_mib(server.pid())?;
    let mut figures = Figures {
        backend,
        organizations: ORGANIZATIONS,
        soc2: Timings::of(soc2.runs_ms),
        iso: Timings::of(iso.runs_ms),
        soc2_made: soc2.first.unwrap_or_default(),
        iso_made: iso.first.unwrap_or_default(),
        idle_rss_mib,
        peak_rss_mib,
        rss_above_idle_mib: peak_rss_mib - idle_rss_mib,
        goals: Vec::new(),
        problems,
    };
    figures.goals = goals(&figures);
    print_summary(&figures);
    Ok(figures)
}

/// One template's adoptions so far: their wall times and what the first made.
struct Adoptions {
    template: &'static str,
    runs_ms: Vec<f64>,
    first: Option<Made>,
}

impl Adoptions {
    fn new(template: &'static str) -> Self {
        Adoptions { template, runs_ms: Vec::with_capacity(ORGANIZATIONS), first: None }
    }

    /// Adopts the template in `organization` as the session's user, timed from request sent to
    /// answer read; a problem when it made other than the first organization's did.
    fn adopt(&mut self, server: &Server, session: &str, organization: &str, problems: &mut Vec<String>) -> Result<()> {
        let path = format!("/v1/framework-templates/{}/adopt", self.template);
        let request = Request::post(&path, "{}").with_session(session).with_organization(organization);
        let started = Instant::now();
        let body = request
            .expect(&server.address, 201)
            .with_context(|| format!("{organization} adopting {}", self.template))?;
        self.runs_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let made = Made::parse(&body)?;
        match &self.first {
            None => self.first = Some(made),
            Some(first) if *first != made => {
                let template = self.template;
                problems.push(format!("{organization}: {template} made {}, not {}", made.summary(), first.summary()));
            }
            Some(_) => {}
        }
        Ok(())
    }
}

/// The issue's goals, each with whether it held.
fn goals(figures: &Figures) -> Vec<Check> {
    let name = format!("{}: {NAME}", figures.backend.name());
    let slowest = figures.soc2.max_ms.max(figures.iso.max_ms);
    vec![
        Check {
            target: format!("{name}: every adoption < {ADOPTION_GOAL_MS:.0} ms"),
            met: slowest < ADOPTION_GOAL_MS && figures.problems.is_empty(),
            figure: format!("slowest {SOC2} {:.0} ms, {ISO} {:.0} ms", figures.soc2.max_ms, figures.iso.max_ms),
        },
        Check {
            target: format!("{name}: peak RSS ≤ idle + {RSS_ABOVE_IDLE_GOAL_MIB:.0} MiB"),
            met: figures.rss_above_idle_mib <= RSS_ABOVE_IDLE_GOAL_MIB,
            figure: format!("+{:.1} MiB", figures.rss_above_idle_mib),
        },
    ]
}

fn print_summary(figures: &Figures) {
    println!("    {SOC2}: {}", figures.soc2_made.summary());
    println!("    {ISO}: {}", figures.iso_made.summary());
    println!(
        "    {}: {SOC2} min/median/max {} ms, {ISO} {} ms; RSS idle {:.1} MiB, peak {:.1} MiB ({:+.1}, goal ≤ \
         {RSS_ABOVE_IDLE_GOAL_MIB:.0}){}",
        figures.backend.name(),
        figures.soc2.summary(),
        figures.iso.summary(),
        figures.idle_rss_mib,
        figures.peak_rss_mib,
        figures.rss_above_idle_mib,
        if figures.problems.is_empty() { String::new() } else { format!("; {}", figures.problems.join("; ")) },
    );
}

/// The case's table, and whether each goal held (goals, not targets: the summary line leaves
/// them out).
pub(super) fn table(cases: &[Figures]) -> String {
    if cases.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "\n{NAME} ({ORGANIZATIONS} organizations: {SOC2}, then {ISO})\n{:<8} {:>22} {:>22} {:>9} {:>9} {:>11}\n",
        "backend", "SOC 2 ms min/med/max", "ISO ms min/med/max", "idle MiB", "peak MiB", "above idle",
    );
    for figures in cases {
        let _ = writeln!(
            text,
            "{:<8} {:>22} {:>22} {:>9.1} {:>9.1} {:>+11.1}",
            figures.backend.name(),
            figures.soc2.summary(),
            figures.iso.summary(),
            figures.idle_rss_mib,
            figures.peak_rss_mib,
            figures.rss_above_idle_mib,
        );
    }
    for goal in cases.iter().flat_map(|figures| &figures.goals) {
        let held = if goal.met { "met" } else { "missed" };
        let _ = writeln!(text, "goal {held}: {} ({})", goal.target, goal.figure);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_take_the_middle_of_an_even_count() {
        let timings = Timings::of(vec![40.0, 10.0, 30.0, 20.0]);
        assert_eq!((timings.min_ms, timings.median_ms, timings.max_ms), (10.0, 25.0, 40.0));
        assert_eq!(Timings::of(vec![3.0, 1.0, 2.0]).median_ms, 2.0);
        assert_eq!(timings.runs_ms, [40.0, 10.0, 30.0, 20.0], "in the order measured");
    }

    #[test]
    fn reads_what_an_adoption_made() -> Result<()> {
        let body = r#"{"id":"frw_1","library":{"created":{"controls":[{"id":"ctl_1"},{"id":"ctl_2"}],
            "policies":[{"id":"pol_1"}],"tasks":[],"mappings":5,"evidenceSources":3},
            "reused":{"controls":["ctl_0"],"policies":[],"tasks":[]}}}"#;
        let made = Made::parse(body)?;
        let expected =
            Made { controls: 2, policies: 1, tasks: 0, mappings: 5, evidence_sources: 3, reused_controls: 1 };
        assert_eq!(made, expected);
        assert!(Made::parse(r#"{"library":{}}"#).is_err(), "no counts");
        Ok(())
    }
}
