//! The check cases' part of the report: their table, their targets and their place in
//! `bench.json`; with them the adoption case, whose goals are reported but are no targets.

use std::fmt::Write as _;

use serde::Serialize;

use super::report::{Check, thousands};
use super::{adoption, aws_checks, sweep};

/// The figures of the check cases that ran, per backend, and of the adoption case.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckCases {
    pub aws: Vec<aws_checks::Figures>,
    pub sweep: Vec<sweep::Figures>,
    /// A member of its own in `bench.json` (`adoptionCases`): it is no check case.
    #[serde(skip)]
    pub adoption: Vec<adoption::Figures>,
}

impl CheckCases {
    /// The targets: the AWS run finishes with results, its memory stays within its goal and its
    /// time is moto's (our CPU below moto's); every sweep keeps its promises (one good run per
    /// connection, the provider's bound).
    pub(super) fn targets(&self) -> Vec<Check> {
        let aws = self.aws.iter().flat_map(|figures| {
            let name = format!("{}: {}", figures.backend.name(), aws_checks::NAME);
            [
                Check {
                    target: format!("{name}: the run finishes with results"),
                    met: figures.problems.is_empty(),
                    figure: match figures.problems.is_empty() {
                        true => format!("{} results", thousands(figures.results)),
                        false => figures.problems.join("; "),
                    },
                },
                Check {
                    target: format!("{name}: peak RSS ≤ idle + {} MiB", aws_checks::RSS_ABOVE_IDLE_GOAL_MIB),
                    met: figures.rss_above_idle_mib <= aws_checks::RSS_ABOVE_IDLE_GOAL_MIB,
                    figure: format!("+{:.1} MiB", figures.rss_above_idle_mib),
                },
                Check {
                    target: format!("{name}: our CPU time below moto's"),
                    met: figures.server_cpu_seconds < figures.moto_cpu_seconds,
                    figure: format!("{:.2} s against {:.2} s", figures.server_cpu_seconds, figures.moto_cpu_seconds),
                },
            ]
        });
        let sweeps = self.sweep.iter().map(|figures| Check {
            target: format!(
                "{}: {}: one good run per connection, ≤ {} provider requests at once",
                figures.backend.name(),
                sweep::NAME,
                figures.bound
            ),
            met: figures.problems.is_empty(),
            figure: match figures.problems.is_empty() {
                true => format!("{:.1} runs/s, at most {} at once", figures.per_second, figures.most_in_flight),
                false => figures.problems.join("; "),
            },
        });
        aws.chain(sweeps).collect()
    }

    pub(super) fn table(&self) -> String {
        let mut text = self.aws_table();
        text.push_str(&self.sweep_table());
        text.push_str(&adoption::table(&self.adoption));
        text
    }

    fn sweep_table(&self) -> String {
        let mut text = String::new();
        if self.sweep.is_empty() {
            return text;
        }
        let _ = write!(
            text,
            "\n{} ({} connections, {} instances)\n{:<8} {:>8} {:>10} {:>16} {:>9}\n",
            sweep::NAME,
            sweep::CONNECTIONS,
            sweep::INSTANCES,
            "backend",
            "runs/s",
            "seconds",
            "most at once",
            "peak MiB",
        );
        for figures in &self.sweep {
            let at_once = format!("{}/{}", figures.most_in_flight, figures.bound);
            let _ = writeln!(
                text,
                "{:<8} {:>8.1} {:>10.2} {:>16} {:>9.1}",
                figures.backend.name(),
                figures.per_second,
                figures.seconds,
                at_once,
                figures.peak_rss_mib,
            );
        }
        text
    }

    fn aws_table(&self) -> String {
        if self.aws.is_empty() {
            return String::new();
        }
        let mut text = format!(
            "\n{} ({} IAM users, {} buckets)\n{:<8} {:>8} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9}\n",
            aws_checks::NAME,
            thousands(aws_checks::USERS as u64),
            thousands(aws_checks::BUCKETS as u64),
            "backend",
            "run s",
            "results",
            "requests",
            "our CPU s",
            "moto CPU s",
            "idle MiB",
            "peak MiB",
        );
        for figures in &self.aws {
            let _ = writeln!(
                text,
                "{:<8} {:>8.2} {:>9} {:>9} {:>10.2} {:>10.2} {:>9.1} {:>9.1}",
                figures.backend.name(),
                figures.run_seconds,
                figures.results,
                figures.requests,
                figures.server_cpu_seconds,
                figures.moto_cpu_seconds,
                figures.idle_rss_mib,
                figures.peak_rss_mib,
            );
        }
        text
    }
}
