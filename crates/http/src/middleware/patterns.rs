//! Which route pattern a path belongs to (`/v1/risks/{id}`), for the metrics and the access log.
//!
//! actix's `match_pattern` answers the same by running every route's regular expression
//! (regex-lite's PikeVM) until one matches: 3 % of a PATCH's CPU in a profile. The patterns here
//! have only literal segments and `{name}` segments, so they are compared segment by segment.

/// Every route's pattern, split into segments.
pub struct RoutePatterns {
    patterns: Vec<(String, Vec<Segment>)>,
}

#[derive(Debug, PartialEq)]
enum Segment {
    Literal(String),
    /// `{name}`: any non-empty segment.
    Parameter,
}

impl RoutePatterns {
    /// The patterns of `paths`, in order; a repeated path counts once.
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a str>) -> Self {
        let mut patterns: Vec<(String, Vec<Segment>)> = Vec::new();
        for path in paths {
            if patterns.iter().any(|(known, _)| known == path) {
                continue;
            }
            let segments = path
                .split('/')
                .map(|segment| match segment.starts_with('{') && segment.ends_with('}') {
                    true => Segment::Parameter,
                    false => Segment::Literal(segment.to_owned()),
                })
                .collect();
            patterns.push((path.to_owned(), segments));
        }
        Self { patterns }
    }

    /// The first pattern `path` matches, as actix would route it.
    pub fn of(&self, path: &str) -> Option<&str> {
        self.patterns.iter().find(|(_, segments)| matches(segments, path)).map(|(pattern, _)| pattern.as_str())
    }
}

fn matches(segments: &[Segment], path: &str) -> bool {
    let mut parts = path.split('/');
    let all_match = segments.iter().all(|segment| match (segment, parts.next()) {
        (Segment::Literal(literal), Some(part)) => literal == part,
        (Segment::Parameter, Some(part)) => !part.is_empty(),
        (_, None) => false,
    });
    all_match && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_gets_the_pattern_actix_routes_it_to() {
        let routes = crate::route_table();
        let patterns = RoutePatterns::new(routes.iter().map(|(_, path)| path.as_str()));
        let cases = [
            ("/v1/risks", Some("/v1/risks")),
            ("/v1/risks/rsk_1", Some("/v1/risks/{id}")),
            ("/v1/people/mem_1/devices", Some("/v1/people/{id}/devices")),
            ("/v1/browser/automations/task/tsk_1", Some("/v1/browser/automations/task/{taskId}")),
            ("/health", Some("/health")),
            ("/v1/risks/", None),
            ("/v1/risks//", None),
            ("/v1/risks/rsk_1/extra", None),
            ("/v1/nothing", None),
            ("/", None),
        ];
        for (path, expected) in cases {
            assert_eq!(patterns.of(path), expected, "{path}");
        }
        // every route's own pattern matches itself
        for (_, path) in &routes {
            assert_eq!(patterns.of(path), Some(path.as_str()));
        }
    }
}
