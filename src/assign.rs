//! `NAME=VALUE`, as the command line writes a param override (`--set`, D2) and an
//! input of `poolc eval`: parsed here once, with one rule for both. NAME is taken with
//! its whitespace removed (so `free( kv )` names `free(kv)`); VALUE is a number as
//! Pool writes one (L2: an underscore may separate two digits), or `inf`, `-inf` or
//! `NaN`. This module only parses; what a name may name is the caller's business.

use std::fmt;

/// Why a `NAME=VALUE` argument does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AssignmentError {
    /// There is no `=`.
    NoEquals { text: String },
    /// Nothing stands before the `=`.
    NoName { text: String },
    /// VALUE is not a number.
    NotANumber { value: String },
}

impl fmt::Display for AssignmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssignmentError::NoEquals { text } => write!(f, "expected NAME=VALUE, found `{text}`"),
            AssignmentError::NoName { text } => write!(f, "missing NAME in `{text}`"),
            AssignmentError::NotANumber { value } => {
                write!(f, "`{value}` is not a number (nor inf, -inf or NaN)")
            }
        }
    }
}

impl std::error::Error for AssignmentError {}

/// Parses one `NAME=VALUE` argument.
pub fn parse_assignment(text: &str) -> Result<(String, f64), AssignmentError> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| AssignmentError::NoEquals {
            text: text.to_owned(),
        })?;
    let name: String = name.chars().filter(|c| !c.is_whitespace()).collect();
    if name.is_empty() {
        return Err(AssignmentError::NoName {
            text: text.to_owned(),
        });
    }
    let value = value.trim();
    let not_a_number = || AssignmentError::NotANumber {
        value: value.to_owned(),
    };
    Ok((name, number(value).ok_or_else(not_a_number)?))
}

/// A number with L2's digit separators, or one of f64's own words.
fn number(text: &str) -> Option<f64> {
    let chars: Vec<char> = text.chars().collect();
    let separator_ok = |i: usize| {
        let digit = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(char::is_ascii_digit)
        };
        digit(i.checked_sub(1)) && digit(Some(i + 1))
    };
    if (0..chars.len()).any(|i| chars.get(i) == Some(&'_') && !separator_ok(i)) {
        return None;
    }
    text.replace('_', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d2_name_loses_its_whitespace_and_value_takes_separators_and_words() {
        assert_eq!(parse_assignment(" n = 1_000 "), Ok(("n".into(), 1000.0)));
        assert_eq!(
            parse_assignment("free( kv )=-inf"),
            Ok(("free(kv)".into(), f64::NEG_INFINITY))
        );
        assert!(parse_assignment("x=NaN").is_ok_and(|(_, v)| v.is_nan()));
        assert_eq!(parse_assignment("x=1e9"), Ok(("x".into(), 1e9)));
    }

    #[test]
    fn d2_malformed_assignments_say_what_is_wrong() {
        assert_eq!(
            parse_assignment("prompt"),
            Err(AssignmentError::NoEquals {
                text: "prompt".into()
            })
        );
        assert_eq!(
            parse_assignment(" =3"),
            Err(AssignmentError::NoName { text: " =3".into() })
        );
        for bad in ["lots", "_1", "1_", "1__0", "1_.5"] {
            assert_eq!(
                parse_assignment(&format!("x={bad}")),
                Err(AssignmentError::NotANumber { value: bad.into() }),
                "{bad}"
            );
        }
    }
}
