//! The checks read through EC2 in each region: EBS encryption by default, security groups open
//! to the internet on SSH or RDP, and VPCs' flow logs.

use std::collections::BTreeMap;

use compliance_domain::check_result::{CheckResult, CheckedResource};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::client::{AwsFailure, AwsRequest, Service};
use super::regions::EC2_VERSION;
use super::xml::{self, Items};
use super::{EBS_DEFAULT_ENCRYPTION, SECURITY_GROUP_ADMIN_PORTS, Session, VPC_FLOW_LOGS, listed, verdict, wants};

const GET_EBS_ENCRYPTION_BY_DEFAULT: &str = "ec2:GetEbsEncryptionByDefault";
const DESCRIBE_SECURITY_GROUPS: &str = "ec2:DescribeSecurityGroups";
const DESCRIBE_VPCS: &str = "ec2:DescribeVpcs";
const DESCRIBE_FLOW_LOGS: &str = "ec2:DescribeFlowLogs";
/// EC2's largest page of the lists read here.
const PAGE: &str = "1000";
/// The ports whose opening to the internet fails a security group: SSH and RDP.
const ADMIN_PORTS: &[(i64, &str)] = &[(22, "SSH"), (3389, "RDP")];

/// The EC2 checks of `wanted` in `region`, one the account may use.
pub(crate) async fn checks(session: &Session<'_>, region: &str, wanted: &[&str]) -> Vec<CheckResult> {
    let mut results = Vec::new();
    if wants(wanted, EBS_DEFAULT_ENCRYPTION) {
        results.push(ebs_default_encryption(session, region).await);
    }
    if wants(wanted, SECURITY_GROUP_ADMIN_PORTS) {
        results.extend(security_groups(session, region).await);
    }
    if wants(wanted, VPC_FLOW_LOGS) {
        results.extend(vpc_flow_logs(session, region).await);
    }
    results
}

/// A page of an EC2 list: its items and the next page's token.
trait Page: DeserializeOwned {
    type Item;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

/// Every page of `operation` in `region`.
async fn list<P: Page>(
    session: &Session<'_>,
    region: &str,
    operation: &str,
    action: &'static str,
) -> Result<Vec<P::Item>, AwsFailure> {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = vec![("MaxResults", PAGE)];
        if let Some(token) = &token {
            params.push(("NextToken", token));
        }
        let request = AwsRequest::query(Service::Ec2, region, operation, EC2_VERSION, &params, action);
        let body = session.client.send(&request).await?;
        let (page, next) = xml::parse::<P>(&body, action)?.into_parts();
        items.extend(page);
        match next.filter(|t| !t.is_empty()) {
            Some(next) if token.as_ref() != Some(&next) => token = Some(next),
            _ => return Ok(items),
        }
    }
}

#[derive(Deserialize)]
struct EbsEncryptionByDefault {
    #[serde(rename = "ebsEncryptionByDefault")]
    enabled: bool,
}

/// `aws.ec2.ebs-default-encryption` in `region`.
async fn ebs_default_encryption(session: &Session<'_>, region: &str) -> CheckResult {
    let resource = session.account.region_resource(region);
    let request = AwsRequest::query(
        Service::Ec2,
        region,
        "GetEbsEncryptionByDefault",
        EC2_VERSION,
        &[],
        GET_EBS_ENCRYPTION_BY_DEFAULT,
    );
    let answer = match session.client.send(&request).await {
        Ok(body) => xml::parse::<EbsEncryptionByDefault>(&body, GET_EBS_ENCRYPTION_BY_DEFAULT),
        Err(failure) => Err(failure),
    };
    match answer {
        Ok(answer) if answer.enabled => verdict(
            EBS_DEFAULT_ENCRYPTION,
            resource,
            true,
            format!("New EBS volumes in {region} are encrypted by default."),
        ),
        Ok(_) => {
            verdict(EBS_DEFAULT_ENCRYPTION, resource, false, format!("EBS encryption by default is off in {region}."))
        }
        Err(failure) => CheckResult::error(EBS_DEFAULT_ENCRYPTION, resource, failure.failure),
    }
}

#[derive(Deserialize)]
struct SecurityGroupsPage {
    #[serde(rename = "securityGroupInfo", default)]
    groups: Items<SecurityGroup>,
    #[serde(rename = "nextToken", default)]
    next_token: Option<String>,
}

impl Page for SecurityGroupsPage {
    type Item = SecurityGroup;
    fn into_parts(self) -> (Vec<SecurityGroup>, Option<String>) {
        (self.groups.items, self.next_token)
    }
}

#[derive(Deserialize)]
struct SecurityGroup {
    #[serde(rename = "groupId")]
    id: String,
    #[serde(rename = "groupName", default)]
    name: String,
    #[serde(rename = "ipPermissions", default)]
    ingress: Items<Permission>,
}

#[derive(Deserialize)]
struct Permission {
    #[serde(rename = "ipProtocol")]
    protocol: String,
    #[serde(rename = "fromPort", default)]
    from_port: Option<i64>,
    #[serde(rename = "toPort", default)]
    to_port: Option<i64>,
    #[serde(rename = "ipRanges", default)]
    ipv4: Items<Ipv4Range>,
    #[serde(rename = "ipv6Ranges", default)]
    ipv6: Items<Ipv6Range>,
}

#[derive(Deserialize)]
struct Ipv4Range {
    #[serde(rename = "cidrIp")]
    cidr: String,
}

#[derive(Deserialize)]
struct Ipv6Range {
    #[serde(rename = "cidrIpv6")]
    cidr: String,
}

/// `aws.ec2.security-group-admin-ports` in `region`: one result per security group.
async fn security_groups(session: &Session<'_>, region: &str) -> Vec<CheckResult> {
    let groups =
        match list::<SecurityGroupsPage>(session, region, "DescribeSecurityGroups", DESCRIBE_SECURITY_GROUPS).await {
            Ok(groups) => groups,
            Err(failure) => {
                return vec![CheckResult::error(
                    SECURITY_GROUP_ADMIN_PORTS,
                    session.account.region_resource(region),
                    failure.failure,
                )];
            }
        };
    groups
        .into_iter()
        .map(|group| {
            let resource = CheckedResource {
                kind: "aws.ec2.security-group".into(),
                id: format!(
                    "arn:{}:ec2:{region}:{}:security-group/{}",
                    session.account.partition, session.account.id, group.id
                ),
                name: group.name.clone(),
                region: Some(region.to_owned()),
            };
            let open = open_admin_ports(&group.ingress.items);
            let detail = if open.is_empty() {
                format!("Security group {} ({}) opens neither SSH nor RDP to the internet.", group.name, group.id)
            } else {
                format!("Security group {} ({}) allows {}.", group.name, group.id, listed(&open))
            };
            verdict(SECURITY_GROUP_ADMIN_PORTS, resource, open.is_empty(), detail)
        })
        .collect()
}

/// The ingress rules opening SSH or RDP (or every port) to `0.0.0.0/0` or `::/0`, described.
fn open_admin_ports(rules: &[Permission]) -> Vec<String> {
    let mut open = Vec::new();
    for rule in rules {
        let sources: Vec<&str> = rule
            .ipv4
            .items
            .iter()
            .map(|r| r.cidr.as_str())
            .chain(rule.ipv6.items.iter().map(|r| r.cidr.as_str()))
            .filter(|cidr| matches!(*cidr, "0.0.0.0/0" | "::/0"))
            .collect();
        if sources.is_empty() {
            continue;
        }
        let what = match rule.protocol.to_ascii_lowercase().as_str() {
            "-1" | "all" => Some("all traffic".to_owned()),
            "tcp" | "6" => {
                let (from, to) = (rule.from_port.unwrap_or(0), rule.to_port.unwrap_or(65_535));
                let (from, to) = if from < 0 || to < 0 { (0, 65_535) } else { (from, to) };
                let ports: Vec<String> = ADMIN_PORTS
                    .iter()
                    .filter(|(port, _)| (from..=to).contains(port))
                    .map(|(port, name)| format!("{name} (TCP {port})"))
                    .collect();
                (!ports.is_empty()).then(|| ports.join(" and "))
            }
            _ => None,
        };
        if let Some(what) = what {
            for source in sources {
                open.push(format!("{what} from {source}"));
            }
        }
    }
    open
}

#[derive(Deserialize)]
struct VpcsPage {
    #[serde(rename = "vpcSet", default)]
    vpcs: Items<Vpc>,
    #[serde(rename = "nextToken", default)]
    next_token: Option<String>,
}

impl Page for VpcsPage {
    type Item = Vpc;
    fn into_parts(self) -> (Vec<Vpc>, Option<String>) {
        (self.vpcs.items, self.next_token)
    }
}

#[derive(Deserialize)]
struct Vpc {
    #[serde(rename = "vpcId")]
    id: String,
    #[serde(rename = "tagSet", default)]
    tags: Items<Tag>,
}

#[derive(Deserialize)]
struct Tag {
    key: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct FlowLogsPage {
    #[serde(rename = "flowLogSet", default)]
    flow_logs: Items<FlowLog>,
    #[serde(rename = "nextToken", default)]
    next_token: Option<String>,
}

impl Page for FlowLogsPage {
    type Item = FlowLog;
    fn into_parts(self) -> (Vec<FlowLog>, Option<String>) {
        (self.flow_logs.items, self.next_token)
    }
}

#[derive(Deserialize)]
struct FlowLog {
    #[serde(rename = "flowLogId", default)]
    id: String,
    #[serde(rename = "resourceId", default)]
    resource_id: String,
    #[serde(rename = "flowLogStatus", default)]
    status: String,
}

/// `aws.vpc.flow-logs` in `region`: one result per VPC.
async fn vpc_flow_logs(session: &Session<'_>, region: &str) -> Vec<CheckResult> {
    let region_error = |failure: AwsFailure| {
        vec![CheckResult::error(VPC_FLOW_LOGS, session.account.region_resource(region), failure.failure)]
    };
    let vpcs = match list::<VpcsPage>(session, region, "DescribeVpcs", DESCRIBE_VPCS).await {
        Ok(vpcs) => vpcs,
        Err(failure) => return region_error(failure),
    };
    if vpcs.is_empty() {
        return Vec::new();
    }
    let flow_logs = match list::<FlowLogsPage>(session, region, "DescribeFlowLogs", DESCRIBE_FLOW_LOGS).await {
        Ok(flow_logs) => flow_logs,
        Err(failure) => return region_error(failure),
    };
    let mut active: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for log in flow_logs.iter().filter(|log| log.status.eq_ignore_ascii_case("ACTIVE")) {
        active.entry(log.resource_id.as_str()).or_default().push(log.id.clone());
    }
    vpcs.iter()
        .map(|vpc| {
            let name = vpc.tags.items.iter().find(|t| t.key == "Name").map_or(vpc.id.as_str(), |t| t.value.as_str());
            let resource = CheckedResource {
                kind: "aws.ec2.vpc".into(),
                id: format!("arn:{}:ec2:{region}:{}:vpc/{}", session.account.partition, session.account.id, vpc.id),
                name: name.to_owned(),
                region: Some(region.to_owned()),
            };
            match active.get(vpc.id.as_str()) {
                Some(logs) => verdict(
                    VPC_FLOW_LOGS,
                    resource,
                    true,
                    format!("VPC {name} ({}) has active flow logs: {}.", vpc.id, listed(logs)),
                ),
                None => {
                    verdict(VPC_FLOW_LOGS, resource, false, format!("VPC {name} ({}) has no active flow log.", vpc.id))
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(protocol: &str, from: Option<i64>, to: Option<i64>, v4: &[&str], v6: &[&str]) -> Permission {
        Permission {
            protocol: protocol.into(),
            from_port: from,
            to_port: to,
            ipv4: Items { items: v4.iter().map(|c| Ipv4Range { cidr: (*c).into() }).collect() },
            ipv6: Items { items: v6.iter().map(|c| Ipv6Range { cidr: (*c).into() }).collect() },
        }
    }

    #[test]
    fn ssh_rdp_or_every_port_open_to_the_internet_is_found() {
        assert_eq!(
            open_admin_ports(&[rule("tcp", Some(22), Some(22), &["0.0.0.0/0"], &[])]),
            ["SSH (TCP 22) from 0.0.0.0/0"]
        );
        assert_eq!(open_admin_ports(&[rule("-1", None, None, &[], &["::/0"])]), ["all traffic from ::/0"]);
        assert_eq!(
            open_admin_ports(&[rule("6", Some(0), Some(65535), &["0.0.0.0/0"], &[])]),
            ["SSH (TCP 22) and RDP (TCP 3389) from 0.0.0.0/0"]
        );
        assert!(open_admin_ports(&[rule("tcp", Some(22), Some(22), &["10.0.0.0/8"], &[])]).is_empty());
        assert!(open_admin_ports(&[rule("tcp", Some(443), Some(443), &["0.0.0.0/0"], &[])]).is_empty());
        assert!(open_admin_ports(&[rule("udp", Some(22), Some(22), &["0.0.0.0/0"], &[])]).is_empty());
    }
}
