//! The parser of step lists (see [`super::instruction`] for the grammar).
//!
//! A line is split into words (lower-cased, so keywords are case-insensitive) and quoted strings.
//! Inside quotes, `\"` is a quote and `\\` a backslash; any other backslash is kept as it is, so
//! CSS selectors and Windows paths need no doubling.

use super::instruction::{Instruction, MAX_STEPS, Step, StepError};
use crate::validation::http_url;

/// The keys `press` accepts, besides any single character.
pub const PRESSABLE_KEYS: &[&str] = &[
    "Enter",
    "Tab",
    "Escape",
    "Backspace",
    "Delete",
    "Space",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
    "PageUp",
    "PageDown",
];

/// The longest quoted string of a step.
const ARGUMENT_MAX: usize = 2_000;

const KEYWORDS: &[&str] = &["go", "click", "type", "press", "wait", "expect", "screenshot"];
const ANY_STEP: &str = "a step: go to, click, click css, type, type secret, press, wait for, expect text, expect no text, expect url \
     contains or screenshot";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
}

pub(super) fn parse(text: &str) -> Result<Instruction, StepError> {
    let mut lines =
        text.lines().enumerate().map(|(i, line)| (i + 1, without_marker(line.trim()))).filter(|(_, l)| !l.is_empty());
    let Some((_, first)) = lines.clone().next() else { return Ok(Instruction::FreeText(text.to_owned())) };
    if !looks_like_a_step(first) {
        return Ok(Instruction::FreeText(text.to_owned()));
    }
    let mut steps = Vec::new();
    for (number, line) in lines.by_ref() {
        if steps.len() == MAX_STEPS {
            return Err(StepError { line: number, expected: format!("at most {MAX_STEPS} steps") });
        }
        let tokens = tokens(line).map_err(|expected| StepError { line: number, expected })?;
        steps.push(step(&tokens).map_err(|expected| StepError { line: number, expected })?);
    }
    Ok(Instruction::Steps(steps))
}

/// Drops a leading `1.` or `-` list marker.
fn without_marker(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix('-') {
        return rest.trim_start();
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    match line[digits..].strip_prefix('.') {
        Some(rest) if digits > 0 => rest.trim_start(),
        _ => line,
    }
}

/// The rule that tells a step list from free text: the first line starts with a step keyword and
/// holds a quoted string, or is `screenshot` alone.
fn looks_like_a_step(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
    KEYWORDS.contains(&first.as_str()) && (line.contains('"') || line.eq_ignore_ascii_case("screenshot"))
}

fn tokens(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut quoted = String::new();
            loop {
                match chars.next() {
                    None => return Err("a closing \" after the quoted text".into()),
                    Some('"') => break,
                    Some('\\') if matches!(chars.peek(), Some('"' | '\\')) => quoted.extend(chars.next()),
                    Some(other) => quoted.push(other),
                }
            }
            if quoted.chars().count() > ARGUMENT_MAX {
                return Err(format!("a quoted text of at most {ARGUMENT_MAX} characters"));
            }
            tokens.push(Token::Quoted(quoted));
        } else {
            let mut word = String::new();
            while let Some(&c) = chars.peek().filter(|c| !c.is_whitespace() && **c != '"') {
                word.extend(c.to_lowercase());
                chars.next();
            }
            tokens.push(Token::Word(word));
        }
    }
    Ok(tokens)
}

fn step(tokens: &[Token]) -> Result<Step, String> {
    use Token::{Quoted as Q, Word as W};
    let words: Vec<&str> = tokens.iter().map_while(|t| if let W(w) = t { Some(w.as_str()) } else { None }).collect();
    let quoted = |i: usize| match tokens.get(i) {
        Some(Q(q)) if !q.trim().is_empty() => Some(q.clone()),
        _ => None,
    };
    let n = tokens.len();
    let parsed = match words.as_slice() {
        ["go", "to"] if n == 3 => quoted(2).map(|url| Step::GoTo { url }),
        ["click"] if n == 2 => quoted(1).map(|text| Step::ClickText { text }),
        ["click", "css"] if n == 3 => quoted(2).map(|selector| Step::ClickCss { selector }),
        ["type"] if n == 4 && tokens[2] == W("into".into()) => {
            // A typed value may be blank (clearing a field is typing nothing).
            let value = match &tokens[1] {
                Q(value) => Some(value.clone()),
                W(_) => None,
            };
            value.zip(quoted(3)).map(|(value, field)| Step::Type { value, field })
        }
        ["type", "secret"] if n == 5 && tokens[3] == W("into".into()) => {
            quoted(2).zip(quoted(4)).map(|(name, field)| Step::TypeSecret { name, field })
        }
        ["press"] if n == 2 => quoted(1).map(|key| Step::Press { key }),
        ["wait", "for"] if n == 3 => quoted(2).map(|text| Step::WaitFor { text }),
        ["expect", "text"] if n == 3 => quoted(2).map(|text| Step::ExpectText { text }),
        ["expect", "no", "text"] if n == 4 => quoted(3).map(|text| Step::ExpectNoText { text }),
        ["expect", "url", "contains"] if n == 4 => quoted(3).map(|text| Step::ExpectUrlContains { text }),
        ["screenshot"] if n == 1 => Some(Step::Screenshot),
        _ => None,
    };
    let step = parsed.ok_or_else(|| expected(&words))?;
    check(&step)?;
    Ok(step)
}

/// What a line starting with `words` should have looked like.
fn expected(words: &[&str]) -> String {
    let form = match words.first().copied() {
        Some("go") => r#"go to "URL""#,
        Some("click") => r#"click "visible text" or click css "selector""#,
        Some("type") => r#"type "value" into "field" or type secret "NAME" into "field""#,
        Some("press") => r#"press "key""#,
        Some("wait") => r#"wait for "text""#,
        Some("expect") => r#"expect text "…", expect no text "…" or expect url contains "…""#,
        Some("screenshot") => "screenshot alone on its line",
        _ => return ANY_STEP.to_owned(),
    };
    format!("{form} (each quoted text non-empty)")
}

fn check(step: &Step) -> Result<(), String> {
    match step {
        Step::GoTo { url } => http_url("instruction", url.clone())
            .map(|_| ())
            .map_err(|e| format!("go to \"URL\" with a URL that {}", e.message)),
        Step::Press { key } if !(key.chars().count() == 1 || PRESSABLE_KEYS.contains(&key.as_str())) => {
            Err(format!("press with a single character or one of {}", PRESSABLE_KEYS.join(", ")))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn steps(text: &str) -> Vec<Step> {
        match parse(text).unwrap() {
            Instruction::Steps(steps) => steps,
            Instruction::FreeText(_) => panic!("{text:?} was read as free text"),
        }
    }

    #[test]
    fn every_step_of_the_grammar_parses_with_markers_and_any_case() {
        let script = r#"1. Go To "https://example.com/login"
            - type "ada@example.com" into "Email"
            TYPE SECRET "password" into "Password"
            click "Sign in"
            click css "nav a[href=\"/settings\"]"
            press "Enter"
            wait for "Security"
            expect text "MFA enforced"
            expect no text "MFA optional"

            expect url contains "/settings"
            12. screenshot"#;
        let parsed = steps(script);
        assert_eq!(parsed.len(), 11);
        assert_eq!(parsed[0], Step::GoTo { url: "https://example.com/login".into() });
        assert_eq!(parsed[2], Step::TypeSecret { name: "password".into(), field: "Password".into() });
        assert_eq!(parsed[4], Step::ClickCss { selector: r#"nav a[href="/settings"]"#.into() });
        assert_eq!(parsed[10], Step::Screenshot);
    }

    #[test]
    fn free_text_is_what_does_not_start_like_a_step() {
        for text in ["Open Settings → Security and check MFA", "Go to settings and check that MFA is on", "clik \"x\""]
        {
            assert_eq!(parse(text).unwrap(), Instruction::FreeText(text.into()));
        }
    }

    #[test]
    fn a_bad_line_names_its_number_and_what_was_expected() {
        let error = parse("go to \"https://example.com\"\n\nclick Sign in").unwrap_err();
        assert_eq!(error.line, 3);
        assert!(error.expected.starts_with(r#"click "visible text""#), "{}", error.expected);
        let error = parse("screenshot\nopen \"x\"").unwrap_err();
        assert_eq!((error.line, error.expected.as_str()), (2, ANY_STEP));
        let error = parse("click \"unterminated").unwrap_err();
        assert!(error.expected.contains("closing"));
        let error = parse("press \"Hyper\"").unwrap_err();
        assert!(error.expected.contains("Enter"));
        let error = parse("go to \"ftp://example.com\"").unwrap_err();
        assert!(error.expected.starts_with("go to"), "{}", error.expected);
    }

    #[test]
    fn a_step_list_is_bounded() {
        let script = "screenshot\n".repeat(MAX_STEPS + 1);
        assert_eq!(parse(&script).unwrap_err().line, MAX_STEPS + 1);
    }
}
