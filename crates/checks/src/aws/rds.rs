//! RDS in one region: every instance (`DescribeDBInstances`) and every cluster
//! (`DescribeDBClusters`), every page.

use compliance_domain::check_result::{CheckResult, CheckedResource};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::client::{AwsFailure, AwsRequest, Service};
use super::xml;
use super::{
    RDS_CLUSTER_ENCRYPTED, RDS_INSTANCE_BACKUPS, RDS_INSTANCE_ENCRYPTED, RDS_INSTANCE_NOT_PUBLIC, Session, verdict,
    wants,
};

const VERSION: &str = "2014-10-31";
const DESCRIBE_DB_INSTANCES: &str = "rds:DescribeDBInstances";
const DESCRIBE_DB_CLUSTERS: &str = "rds:DescribeDBClusters";
/// RDS's largest page.
const PAGE: &str = "100";

const INSTANCE_CHECKS: &[&str] = &[RDS_INSTANCE_ENCRYPTED, RDS_INSTANCE_NOT_PUBLIC, RDS_INSTANCE_BACKUPS];

#[derive(Deserialize)]
struct InstancesResponse {
    #[serde(rename = "DescribeDBInstancesResult")]
    result: InstancesResult,
}

#[derive(Deserialize)]
struct InstancesResult {
    #[serde(rename = "DBInstances", default)]
    instances: InstanceList,
    #[serde(rename = "Marker", default)]
    marker: Option<String>,
}

#[derive(Deserialize, Default)]
struct InstanceList {
    #[serde(rename = "DBInstance", default)]
    items: Vec<Instance>,
}

#[derive(Deserialize)]
struct Instance {
    #[serde(rename = "DBInstanceIdentifier")]
    id: String,
    #[serde(rename = "DBInstanceArn", default)]
    arn: Option<String>,
    #[serde(rename = "StorageEncrypted", default)]
    encrypted: bool,
    #[serde(rename = "PubliclyAccessible", default)]
    public: bool,
    #[serde(rename = "BackupRetentionPeriod", default)]
    retention_days: u32,
}

#[derive(Deserialize)]
struct ClustersResponse {
    #[serde(rename = "DescribeDBClustersResult")]
    result: ClustersResult,
}

#[derive(Deserialize)]
struct ClustersResult {
    #[serde(rename = "DBClusters", default)]
    clusters: ClusterList,
    #[serde(rename = "Marker", default)]
    marker: Option<String>,
}

#[derive(Deserialize, Default)]
struct ClusterList {
    #[serde(rename = "DBCluster", default)]
    items: Vec<Cluster>,
}

#[derive(Deserialize)]
struct Cluster {
    #[serde(rename = "DBClusterIdentifier")]
    id: String,
    #[serde(rename = "DBClusterArn", default)]
    arn: Option<String>,
    #[serde(rename = "StorageEncrypted", default)]
    encrypted: bool,
}

/// A page of an RDS list: its items and the next page's marker.
trait Page: DeserializeOwned {
    type Item;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

impl Page for InstancesResponse {
    type Item = Instance;
    fn into_parts(self) -> (Vec<Instance>, Option<String>) {
        (self.result.instances.items, self.result.marker)
    }
}

impl Page for ClustersResponse {
    type Item = Cluster;
    fn into_parts(self) -> (Vec<Cluster>, Option<String>) {
        (self.result.clusters.items, self.result.marker)
    }
}

async fn list<P: Page>(
    session: &Session<'_>,
    region: &str,
    operation: &str,
    action: &'static str,
) -> Result<Vec<P::Item>, AwsFailure> {
    let mut items = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let mut params = vec![("MaxRecords", PAGE)];
        if let Some(marker) = &marker {
            params.push(("Marker", marker));
        }
        let request = AwsRequest::query(Service::Rds, region, operation, VERSION, &params, action);
        let body = session.client.send(&request).await?;
        let (page, next) = xml::parse::<P>(&body, action)?.into_parts();
        items.extend(page);
        match next.filter(|m| !m.is_empty()) {
            Some(next) if marker.as_ref() != Some(&next) => marker = Some(next),
            _ => return Ok(items),
        }
    }
}

/// The RDS checks of `wanted` in `region`.
pub(crate) async fn checks(session: &Session<'_>, region: &str, wanted: &[&str]) -> Vec<CheckResult> {
    let mut results = Vec::new();
    let instance_checks: Vec<&str> = INSTANCE_CHECKS.iter().copied().filter(|c| wants(wanted, c)).collect();
    if !instance_checks.is_empty() {
        match list::<InstancesResponse>(session, region, "DescribeDBInstances", DESCRIBE_DB_INSTANCES).await {
            Ok(instances) => {
                for instance in &instances {
                    for check in &instance_checks {
                        results.push(judge_instance(session, region, instance, check));
                    }
                }
            }
            Err(failure) => {
                let resource = session.account.region_resource(region);
                results.extend(super::errors(&instance_checks, &resource, &failure.failure));
            }
        }
    }
    if wants(wanted, RDS_CLUSTER_ENCRYPTED) {
        match list::<ClustersResponse>(session, region, "DescribeDBClusters", DESCRIBE_DB_CLUSTERS).await {
            Ok(clusters) => results.extend(clusters.iter().map(|cluster| {
                let resource = CheckedResource {
                    kind: "aws.rds.cluster".into(),
                    id: cluster.arn.clone().unwrap_or_else(|| {
                        format!(
                            "arn:{}:rds:{region}:{}:cluster:{}",
                            session.account.partition, session.account.id, cluster.id
                        )
                    }),
                    name: cluster.id.clone(),
                    region: Some(region.to_owned()),
                };
                let detail = if cluster.encrypted {
                    format!("Cluster {} is encrypted at rest.", cluster.id)
                } else {
                    format!("Cluster {} is not encrypted at rest.", cluster.id)
                };
                verdict(RDS_CLUSTER_ENCRYPTED, resource, cluster.encrypted, detail)
            })),
            Err(failure) => results.push(CheckResult::error(
                RDS_CLUSTER_ENCRYPTED,
                session.account.region_resource(region),
                failure.failure,
            )),
        }
    }
    results
}

fn judge_instance(session: &Session<'_>, region: &str, instance: &Instance, check: &str) -> CheckResult {
    let resource = CheckedResource {
        kind: "aws.rds.instance".into(),
        id: instance.arn.clone().unwrap_or_else(|| {
            format!("arn:{}:rds:{region}:{}:db:{}", session.account.partition, session.account.id, instance.id)
        }),
        name: instance.id.clone(),
        region: Some(region.to_owned()),
    };
    let id = &instance.id;
    match check {
        RDS_INSTANCE_ENCRYPTED if instance.encrypted => {
            verdict(check, resource, true, format!("Instance {id} is encrypted at rest."))
        }
        RDS_INSTANCE_ENCRYPTED => verdict(check, resource, false, format!("Instance {id} is not encrypted at rest.")),
        RDS_INSTANCE_NOT_PUBLIC if instance.public => {
            verdict(check, resource, false, format!("Instance {id} is publicly accessible."))
        }
        RDS_INSTANCE_NOT_PUBLIC => verdict(check, resource, true, format!("Instance {id} is not publicly accessible.")),
        _ if instance.retention_days == 0 => {
            verdict(check, resource, false, format!("Instance {id} keeps no automated backups."))
        }
        _ => verdict(
            check,
            resource,
            true,
            format!("Instance {id} keeps automated backups for {} days.", instance.retention_days),
        ),
    }
}
