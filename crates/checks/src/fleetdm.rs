//! FleetDM's checks (`checks/fleetdm.json`), read through the deployment's device directory (the
//! [`DeviceDirectory`] port, which holds FleetDM's token and pages through a label's hosts).
//!
//! One FleetDM serves every organization of a deployment: the hosts read are those of the label
//! the operator assigned to the run's organization (`target.devices`), never one a connection
//! names. Every check judges the same hosts, read once a run; a host is a member's when FleetDM
//! names the member's e-mail address as its end user (`end_users[].idp_username`, the identity
//! provider's user name) or among its other e-mails (`end_users[].other_emails`,
//! `device_mapping`). Only active members' hosts are judged: another host is `not_applicable`,
//! saying whose it is, so that the population stays whole.

use std::collections::{BTreeSet, HashMap};

use compliance_domain::Timestamp;
use compliance_domain::check::{CheckOutcome, FLEET_POLICIES, fleet_policy_check_id};
use compliance_domain::check_result::{CheckResult, CheckedResource, ReadFailure};
use compliance_ports::{CheckTarget, DeviceDirectory, DeviceError, DevicePerson, DeviceRecord};
use serde_json::Value;

const SEEN: &str = "fleetdm.hosts.seen-recently";
const ENROLLED: &str = "fleetdm.members.enrolled";

/// The checks this module runs: every FleetDM check of the catalog.
pub(crate) const CHECKS: &[&str] = &[FLEET_POLICIES, SEEN, ENROLLED];

/// The API actions, as the catalog's `reads` name them.
const READ_LABEL: &str = "GET /api/v1/fleet/labels/{the organization's label}";
const LIST_HOSTS: &str = "GET /api/v1/fleet/hosts?label_id={the organization's label}&populate_policies=true";
/// How long a host may stay silent.
const SEEN_WITHIN: time::Duration = time::Duration::days(30);
/// The most characters of a policy's resolution a detail repeats.
const RESOLUTION_SHOWN: usize = 300;
/// The most device names a member's detail lists; the rest are counted.
const NAMES_SHOWN: usize = 10;

/// Runs the FleetDM checks of `target.checks` over the hosts of the organization's label.
pub(crate) async fn read(directory: &dyn DeviceDirectory, target: &CheckTarget) -> Vec<CheckResult> {
    let wanted: Vec<&str> = CHECKS.iter().copied().filter(|id| target.checks.iter().any(|asked| asked == id)).collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let label = target.devices.label_id;
    let hosts = match read_hosts(directory, label).await {
        Ok(hosts) => hosts,
        Err(failure) => {
            let resource = label_resource(label);
            return wanted.iter().map(|id| CheckResult::error(id, resource.clone(), failure.clone())).collect();
        }
    };
    let people = People::new(&target.devices.people);
    let hosts: Vec<(&Host, Owner<'_>)> = hosts.iter().map(|host| (host, people.owner(host))).collect();
    wanted
        .iter()
        .flat_map(|check| match *check {
            FLEET_POLICIES => hosts.iter().flat_map(|(host, owner)| policies(host, owner)).collect(),
            SEEN => hosts.iter().map(|(host, owner)| seen_recently(host, owner, target.now)).collect(),
            ENROLLED => enrolled(&target.devices.people, &hosts),
            _ => Vec::new(),
        })
        .collect()
}

/// The hosts of `label`, refused when there is no label, FleetDM does not know it, or it is one
/// of FleetDM's built-in labels (which span every customer's hosts).
async fn read_hosts(directory: &dyn DeviceDirectory, label: Option<i64>) -> Result<Vec<Host>, ReadFailure> {
    let Some(label) = label else {
        let message = "the operator of this deployment has assigned this organization no FleetDM label \
                       (compliance-server admin set-device-label)";
        return Err(ReadFailure::new("no_label", message, READ_LABEL));
    };
    match directory.label(label).await.map_err(|error| failure(&error, READ_LABEL))? {
        None => return Err(ReadFailure::new("label_not_found", "FleetDM has no label with this id", READ_LABEL)),
        Some(found) if found.builtin => {
            let message = "the organization's label is one of FleetDM's built-in labels, which span every \
                           customer's hosts; the operator must assign the organization's own";
            return Err(ReadFailure::new("builtin_label", message, READ_LABEL));
        }
        Some(_) => {}
    }
    let records = directory.hosts_with_label(label).await.map_err(|error| failure(&error, LIST_HOSTS))?;
    records.iter().map(Host::read).collect::<Option<Vec<_>>>().ok_or_else(|| {
        ReadFailure::new("unreadable_answer", "a host of FleetDM's answer has no numeric id", LIST_HOSTS)
    })
}

/// The directory's error as a result's failure: its own words, which never hold the token.
fn failure(error: &DeviceError, action: &str) -> ReadFailure {
    let code = match error {
        DeviceError::NotConfigured => "not_configured".to_owned(),
        DeviceError::Upstream { status } => status.to_string(),
        DeviceError::Timeout => "timeout".to_owned(),
        DeviceError::Unreachable => "unreachable".to_owned(),
        DeviceError::InvalidResponse(_) => "unreadable_answer".to_owned(),
    };
    ReadFailure::new(code, &error.to_string(), action)
}

fn label_resource(label: Option<i64>) -> CheckedResource {
    CheckedResource {
        kind: "fleetdm.label".into(),
        id: label.map_or_else(|| "none".to_owned(), |label| label.to_string()),
        name: "the organization's FleetDM label".into(),
        region: None,
    }
}

/// What the checks read of a host.
#[derive(Debug)]
struct Host {
    id: u64,
    name: String,
    seen: Option<Timestamp>,
    /// Its users' e-mail addresses, lowercase.
    emails: BTreeSet<String>,
    policies: Vec<Policy>,
}

#[derive(Debug)]
struct Policy {
    id: u64,
    name: String,
    critical: bool,
    /// `pass`, `fail`, or empty while the host has not answered.
    response: String,
    resolution: String,
}

impl Host {
    /// The host's fields the checks read; `None` without a numeric id.
    fn read(record: &DeviceRecord) -> Option<Self> {
        let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or_default().trim().to_owned();
        let id = record.get("id")?.as_u64()?;
        let name = ["display_name", "computer_name", "hostname"]
            .iter()
            .map(|field| text(record.get(*field)))
            .find(|name| !name.is_empty())
            .unwrap_or_else(|| format!("host {id}"));
        let seen = record.get("seen_time").and_then(Value::as_str).and_then(|at| Timestamp::parse(at).ok());
        let mut emails = BTreeSet::new();
        for user in array(record.get("end_users")) {
            emails.insert(text(user.get("idp_username")));
            emails.extend(array(user.get("other_emails")).map(|other| text(other.get("email"))));
        }
        emails.extend(array(record.get("device_mapping")).map(|mapping| text(mapping.get("email"))));
        let emails = emails.into_iter().filter(|email| email.contains('@')).map(|e| e.to_lowercase()).collect();
        let policies = array(record.get("policies"))
            .filter_map(|policy| {
                Some(Policy {
                    id: policy.get("id")?.as_u64()?,
                    name: text(policy.get("name")),
                    critical: policy.get("critical").and_then(Value::as_bool).unwrap_or(false),
                    response: text(policy.get("response")),
                    resolution: text(policy.get("resolution")).chars().take(RESOLUTION_SHOWN).collect(),
                })
            })
            .collect();
        Some(Self { id, name, seen, emails, policies })
    }

    fn resource(&self) -> CheckedResource {
        CheckedResource { kind: "fleetdm.host".into(), id: self.id.to_string(), name: self.name.clone(), region: None }
    }
}

/// The items of a JSON array, none for anything else (`null` included: Go's empty slice).
fn array(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value.and_then(Value::as_array).into_iter().flatten()
}

/// Whose a host is.
#[derive(Debug, Clone, Copy)]
enum Owner<'a> {
    /// An active member's.
    Active(&'a DevicePerson),
    /// A member's who is no longer active.
    Former(&'a DevicePerson),
    /// No member's: FleetDM names no one, or no one of the organization.
    Nobody,
}

impl Owner<'_> {
    /// Why a host that is not an active member's is not judged.
    fn not_judged(self) -> Option<String> {
        match self {
            Owner::Active(_) => None,
            Owner::Former(person) => Some(format!("used by {}, who is no longer an active member", person.name)),
            Owner::Nobody => Some("no active member of the organization uses it, as FleetDM knows its users".into()),
        }
    }
}

/// The organization's people by lowercase e-mail address.
struct People<'a> {
    by_email: HashMap<String, &'a DevicePerson>,
}

impl<'a> People<'a> {
    fn new(people: &'a [DevicePerson]) -> Self {
        let mut by_email: HashMap<String, &'a DevicePerson> = HashMap::new();
        for person in people {
            // Of two memberships with one address (a user's, deactivated then added again), the
            // active one owns the host.
            let slot = by_email.entry(person.email.to_lowercase()).or_insert(person);
            if person.active && !slot.active {
                *slot = person;
            }
        }
        Self { by_email }
    }

    /// The host's owner: an active member among its users first.
    fn owner(&self, host: &Host) -> Owner<'a> {
        let people: Vec<&'a DevicePerson> = host.emails.iter().filter_map(|e| self.by_email.get(e).copied()).collect();
        match people.iter().find(|person| person.active) {
            Some(person) => Owner::Active(person),
            None => people.first().map_or(Owner::Nobody, |person| Owner::Former(person)),
        }
    }
}

/// One result per policy the host answers, each under the policy's own check id.
fn policies(host: &Host, owner: &Owner<'_>) -> Vec<CheckResult> {
    host.policies
        .iter()
        .map(|policy| {
            let check = fleet_policy_check_id(policy.id);
            let (outcome, detail) = match (owner.not_judged(), policy.response.as_str()) {
                (Some(why), _) => (CheckOutcome::NotApplicable, format!("{}: {why}", policy.name)),
                (None, "pass") => (CheckOutcome::Pass, format!("{}: passes", policy.name)),
                (None, "fail") => {
                    let critical = if policy.critical { " (critical in Fleet)" } else { "" };
                    let fix = match policy.resolution.is_empty() {
                        true => String::new(),
                        false => format!(". Resolution: {}", policy.resolution),
                    };
                    (CheckOutcome::Fail, format!("{}: fails{critical}{fix}", policy.name))
                }
                (None, _) => {
                    (CheckOutcome::NotApplicable, format!("{}: the host has not answered it yet", policy.name))
                }
            };
            CheckResult::judged(&check, host.resource(), outcome, detail)
        })
        .collect()
}

/// Whether an active member's host reported within [`SEEN_WITHIN`].
fn seen_recently(host: &Host, owner: &Owner<'_>, now: Timestamp) -> CheckResult {
    if let Some(why) = owner.not_judged() {
        return CheckResult::judged(SEEN, host.resource(), CheckOutcome::NotApplicable, why);
    }
    let (outcome, detail) = match host.seen {
        Some(seen) => {
            let days = (now.to_offset() - seen.to_offset()).whole_days();
            let outcome = if seen < now.plus(-SEEN_WITHIN) { CheckOutcome::Fail } else { CheckOutcome::Pass };
            (outcome, format!("last seen on {}, {days} days ago", seen.to_offset().date()))
        }
        None => (CheckOutcome::Fail, "FleetDM has no time it last saw the host".to_owned()),
    };
    CheckResult::judged(SEEN, host.resource(), outcome, detail)
}

/// One result per active member: whether some host is theirs.
fn enrolled(people: &[DevicePerson], hosts: &[(&Host, Owner<'_>)]) -> Vec<CheckResult> {
    people
        .iter()
        .filter(|person| person.active)
        .map(|person| {
            let theirs: Vec<&str> = hosts
                .iter()
                .filter(|(_, owner)| matches!(owner, Owner::Active(o) if o.member_id == person.member_id))
                .map(|(host, _)| host.name.as_str())
                .collect();
            let resource = CheckedResource {
                kind: "person".into(),
                id: person.member_id.to_string(),
                name: format!("{} <{}>", person.name, person.email),
                region: None,
            };
            let (outcome, detail) = match theirs.len() {
                0 => (
                    CheckOutcome::Fail,
                    format!("no host in the organization's FleetDM label names {} as its user", person.email),
                ),
                n => {
                    let mut shown = theirs.iter().take(NAMES_SHOWN).copied().collect::<Vec<_>>().join(", ");
                    if n > NAMES_SHOWN {
                        shown.push_str(&format!(" and {} more", n - NAMES_SHOWN));
                    }
                    (CheckOutcome::Pass, format!("uses {n} enrolled host(s): {shown}"))
                }
            };
            CheckResult::judged(ENROLLED, resource, outcome, detail)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use compliance_domain::MemberId;
    use serde_json::json;

    use super::*;

    fn person(email: &str, active: bool) -> DevicePerson {
        DevicePerson {
            member_id: MemberId::generate(),
            name: email.split('@').next().unwrap().to_owned(),
            email: email.to_owned(),
            active,
        }
    }

    fn host(id: u64, user: &str, seen: &str, policies: Value) -> Host {
        let record = json!({"id": id, "display_name": format!("Laptop {id}"), "seen_time": seen,
            "end_users": [{"idp_username": user, "other_emails": null}], "policies": policies});
        Host::read(record.as_object().unwrap()).unwrap()
    }

    fn now() -> Timestamp {
        Timestamp::parse("2026-12-07T00:00:00Z").unwrap()
    }

    #[test]
    fn a_host_is_its_active_members_and_a_former_members_is_not_judged() {
        let people =
            [person("ada@example.com", false), person("Ada@Example.com", true), person("bo@example.com", false)];
        let directory = People::new(&people);
        let ada = host(1, "ADA@example.com", "2026-12-01T00:00:00Z", json!([]));
        assert!(matches!(directory.owner(&ada), Owner::Active(p) if p.member_id == people[1].member_id));
        let bo = host(2, "bo@example.com", "2026-12-01T00:00:00Z", json!([]));
        let result = seen_recently(&bo, &directory.owner(&bo), now());
        assert_eq!(result.outcome, CheckOutcome::NotApplicable);
        assert!(result.detail.contains("bo, who is no longer"), "{}", result.detail);
        let stranger = host(3, "eve@elsewhere.example", "2026-12-01T00:00:00Z", json!([]));
        assert!(matches!(directory.owner(&stranger), Owner::Nobody));
    }

    #[test]
    fn a_host_silent_for_more_than_30_days_fails() {
        let people = [person("ada@example.com", true)];
        let directory = People::new(&people);
        for (seen, outcome) in
            [("2026-11-06T23:59:59Z", CheckOutcome::Fail), ("2026-11-07T00:00:00Z", CheckOutcome::Pass)]
        {
            let ada = host(1, "ada@example.com", seen, json!([]));
            let result = seen_recently(&ada, &directory.owner(&ada), now());
            assert_eq!(result.outcome, outcome, "{seen}: {}", result.detail);
        }
        let record = json!({"id": 4, "hostname": "h", "end_users": [{"idp_username": "ada@example.com"}]});
        let unseen = Host::read(record.as_object().unwrap()).unwrap();
        assert_eq!(seen_recently(&unseen, &directory.owner(&unseen), now()).outcome, CheckOutcome::Fail);
    }

    #[test]
    fn each_policy_is_a_check_of_its_own_per_host() {
        let people = [person("ada@example.com", true)];
        let directory = People::new(&people);
        let ada = host(
            1,
            "ada@example.com",
            "2026-12-01T00:00:00Z",
            json!([
                {"id": 7, "name": "Disk encryption", "critical": true, "response": "fail", "resolution": "Turn on FileVault."},
                {"id": 9, "name": "Screen lock", "critical": false, "response": "pass"},
                {"id": 11, "name": "Firewall", "response": ""}
            ]),
        );
        let results = policies(&ada, &directory.owner(&ada));
        let got: Vec<(&str, CheckOutcome)> = results.iter().map(|r| (r.check_id.as_str(), r.outcome)).collect();
        assert_eq!(
            got,
            [
                ("fleetdm.policy.7", CheckOutcome::Fail),
                ("fleetdm.policy.9", CheckOutcome::Pass),
                ("fleetdm.policy.11", CheckOutcome::NotApplicable)
            ]
        );
        assert_eq!(results[0].detail, "Disk encryption: fails (critical in Fleet). Resolution: Turn on FileVault.");
        assert_eq!(results[0].resource.id, "1");
    }

    #[test]
    fn an_active_member_without_a_host_fails_enrolment() {
        let people = [person("ada@example.com", true), person("bo@example.com", true), person("cy@example.com", false)];
        let directory = People::new(&people);
        let ada = host(1, "ada@example.com", "2026-12-01T00:00:00Z", json!([]));
        let owner = directory.owner(&ada);
        let results = enrolled(&people, &[(&ada, owner)]);
        let got: Vec<(&str, CheckOutcome)> = results.iter().map(|r| (r.resource.name.as_str(), r.outcome)).collect();
        assert_eq!(got, [("ada <ada@example.com>", CheckOutcome::Pass), ("bo <bo@example.com>", CheckOutcome::Fail)]);
    }
}
