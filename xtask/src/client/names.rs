//! Rust names for the document's names: camelCase members and operation ids become snake_case,
//! wire enum values PascalCase variants.

/// Words of a name: split at anything not a letter or digit and before an upper-case letter that
/// follows a lower-case letter or digit (`nextCursor` → `next`, `cursor`; `api-key` → `api`, `key`).
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for character in name.chars() {
        if !character.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if character.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = character.is_ascii_lowercase() || character.is_ascii_digit();
        current.push(character);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static",
    "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "gen",
];

/// `nextCursor` → `next_cursor`, `type` → `r#type`.
pub fn snake(name: &str) -> String {
    let snake = words(name).iter().map(|word| word.to_ascii_lowercase()).collect::<Vec<_>>().join("_");
    if KEYWORDS.contains(&snake.as_str()) { format!("r#{snake}") } else { snake }
}

/// `pending_approval` → `PendingApproval`, `-createdAt` → `CreatedAtDesc` (a descending sort key),
/// `*:read` → `AllRead`.
pub fn pascal(name: &str) -> String {
    // The API keys' wildcard scopes: `*` and `*:read`.
    let name = name.replace('*', "all ");
    let mut pascal: String = words(&name)
        .iter()
        .map(|word| {
            let mut characters = word.chars();
            characters
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + characters.as_str())
                .unwrap_or_default()
        })
        .collect();
    if name.starts_with('-') {
        pascal.push_str("Desc");
    }
    if pascal.starts_with(|character: char| character.is_ascii_digit()) {
        pascal.insert(0, 'V');
    }
    pascal
}

/// Lines of a doc comment, `///`-prefixed, from a description that may span lines.
pub fn doc(text: &str, out: &mut String) {
    for line in text.lines() {
        if line.is_empty() {
            out.push_str("///\n");
        } else {
            out.push_str("/// ");
            out.push_str(line);
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(snake("nextCursor"), "next_cursor");
        assert_eq!(snake("csrf_token"), "csrf_token");
        assert_eq!(snake("type"), "r#type");
        assert_eq!(snake("listApiKeys"), "list_api_keys");
        assert_eq!(pascal("api-key"), "ApiKey");
        assert_eq!(pascal("pending_approval"), "PendingApproval");
        assert_eq!(pascal("-createdAt"), "CreatedAtDesc");
        assert_eq!(pascal("ApiKeyDto"), "ApiKeyDto");
        assert_eq!(pascal("*"), "All");
        assert_eq!(pascal("*:read"), "AllRead");
        assert_eq!(pascal("risks:write"), "RisksWrite");
    }
}
