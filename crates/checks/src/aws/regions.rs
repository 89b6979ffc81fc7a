//! The account's regions (`ec2:DescribeRegions` with `AllRegions`): those it may use, and those
//! it has not opted in to (where a check per region does not apply).

use serde::Deserialize;

use super::Session;
use super::client::{AwsFailure, AwsRequest, Service, is_region};
use super::xml::{self, Items};

pub(crate) const EC2_VERSION: &str = "2016-11-15";
const DESCRIBE_REGIONS: &str = "ec2:DescribeRegions";

/// A region of the account's partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Region {
    pub(crate) name: String,
    /// `false` for a region the account has not opted in to.
    pub(crate) enabled: bool,
}

#[derive(Deserialize)]
struct DescribeRegionsResponse {
    #[serde(rename = "regionInfo", default)]
    regions: Items<RegionInfo>,
}

#[derive(Deserialize)]
struct RegionInfo {
    #[serde(rename = "regionName")]
    name: String,
    #[serde(rename = "optInStatus", default)]
    opt_in_status: Option<String>,
}

/// Every region of the account's partition, sorted by name, read in the connection's region.
pub(crate) async fn describe(session: &Session<'_>) -> Result<Vec<Region>, AwsFailure> {
    let request = AwsRequest::query(
        Service::Ec2,
        &session.region,
        "DescribeRegions",
        EC2_VERSION,
        &[("AllRegions", "true")],
        DESCRIBE_REGIONS,
    );
    let body = session.client.send(&request).await?;
    let answer: DescribeRegionsResponse = xml::parse(&body, DESCRIBE_REGIONS)?;
    let mut regions: Vec<Region> = answer
        .regions
        .items
        .into_iter()
        .filter(|region| is_region(&region.name) && partition_of(&region.name) == session.account.partition)
        .map(|region| Region { enabled: region.opt_in_status.as_deref() != Some("not-opted-in"), name: region.name })
        .collect();
    regions.sort_by(|a, b| a.name.cmp(&b.name));
    regions.dedup_by(|a, b| a.name == b.name);
    Ok(regions)
}

/// The partition a region belongs to, by its name's prefix.
fn partition_of(region: &str) -> &'static str {
    const PREFIXES: &[(&str, &str)] = &[
        ("cn-", "aws-cn"),
        ("us-gov-", "aws-us-gov"),
        ("us-isob-", "aws-iso-b"),
        ("us-isof-", "aws-iso-f"),
        ("us-iso-", "aws-iso"),
        ("eu-isoe-", "aws-iso-e"),
    ];
    PREFIXES.iter().find(|(prefix, _)| region.starts_with(prefix)).map_or("aws", |(_, partition)| partition)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_belong_to_their_partition() {
        assert_eq!(partition_of("eu-west-1"), "aws");
        assert_eq!(partition_of("us-east-1"), "aws");
        assert_eq!(partition_of("cn-north-1"), "aws-cn");
        assert_eq!(partition_of("us-gov-west-1"), "aws-us-gov");
        assert_eq!(partition_of("us-isob-east-1"), "aws-iso-b");
    }
}
