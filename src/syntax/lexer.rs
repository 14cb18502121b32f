//! The lexer (L1–L3): source text to tokens with byte spans, written as nom parsers over
//! `&str`. It only knows token shapes: every word is an `Ident` here, because whether a
//! word is a keyword depends on where the parser meets it (L1). It must not fail or
//! panic: each lexical error is reported once as a `SyntaxError` and left in the stream
//! as an `Error` token, so the parser can recover around it without reporting it again.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_until, take_while};
use nom::character::complete::{char, digit1, multispace1, one_of, satisfy};
use nom::combinator::{opt, recognize, value};
use nom::multi::{many0, many0_count};
use nom::{IResult, Parser};

use crate::syntax::{Span, SyntaxError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Punct {
    Semi,
    Comma,
    Assign,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    LParen,
    RParen,
    Question,
    Colon,
    OrOr,
    AndAnd,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum TokenKind {
    Ident,
    Number(f64),
    Punct(Punct),
    /// Where the lexer reported an error; the parser fails on it silently.
    Error,
    /// Always the last token, so every parse error has a token to point at.
    Eof,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Token<'a> {
    pub kind: TokenKind,
    pub span: Span,
    /// The token's source text (empty for `Eof`).
    pub text: &'a str,
}

/// Splits `source` into tokens ending with `Eof`, and the lexical errors found.
pub(super) fn lex(source: &str) -> (Vec<Token<'_>>, Vec<SyntaxError>) {
    let mut tokens = Vec::new();
    let mut errors = Vec::new();
    let mut rest = skip_trivia(source);
    while let Some(first) = rest.chars().next() {
        let start = source.len() - rest.len();
        let (next, kind, end) = match token(rest, first) {
            Ok((next, kind)) => (next, kind, source.len() - next.len()),
            Err(error) => {
                errors.push(error.to_syntax_error(start, rest));
                (
                    rest.get(error.skip..).unwrap_or_default(),
                    TokenKind::Error,
                    start + error.len,
                )
            }
        };
        tokens.push(Token {
            kind,
            span: Span::new(start, end),
            text: source.get(start..end).unwrap_or_default(),
        });
        rest = skip_trivia(next);
    }
    tokens.push(Token {
        kind: TokenKind::Eof,
        span: Span::new(source.len(), source.len()),
        text: "",
    });
    (tokens, errors)
}

/// Whitespace and complete comments. An unterminated `/*` is left in place for `token`
/// to report, since only there can it become an error with a span.
fn skip_trivia(input: &str) -> &str {
    let line_comment = recognize((tag("//"), take_till(|c| c == '\n')));
    let block_comment = recognize((tag("/*"), take_until("*/"), tag("*/")));
    let mut trivia = many0_count::<_, nom::error::Error<&str>, _>(alt((
        multispace1,
        line_comment,
        block_comment,
    )));
    trivia.parse(input).map_or(input, |(rest, _)| rest)
}

/// A lexical error: what it is, the bytes its span covers and the bytes it consumes.
struct LexError {
    kind: LexErrorKind,
    len: usize,
    skip: usize,
}

enum LexErrorKind {
    Stray(char),
    UnterminatedComment,
    MalformedNumber(&'static str),
}

impl LexError {
    /// The error found at byte `start`, where the remaining input is `rest`.
    fn to_syntax_error(&self, start: usize, rest: &str) -> SyntaxError {
        let span = Span::new(start, start + self.len);
        match self.kind {
            LexErrorKind::Stray(ch) => SyntaxError::StrayCharacter { span, ch },
            LexErrorKind::UnterminatedComment => SyntaxError::UnterminatedComment { span },
            LexErrorKind::MalformedNumber(reason) => {
                let text = rest.get(..self.len).unwrap_or_default().to_string();
                SyntaxError::MalformedNumber { span, text, reason }
            }
        }
    }
}

fn token(input: &str, first: char) -> Result<(&str, TokenKind), LexError> {
    if input.starts_with("/*") {
        // `skip_trivia` consumes every closed comment, so this one never closes: the
        // rest of the file is inside it. The span marks only the opener, to keep the
        // diagnostic short.
        return Err(LexError {
            kind: LexErrorKind::UnterminatedComment,
            len: 2,
            skip: input.len(),
        });
    }
    if let Ok((rest, text)) = number_body(input) {
        return number(text, rest);
    }
    let mut word = recognize((
        satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ));
    if let Ok((rest, _)) = word.parse(input) as IResult<&str, &str> {
        return Ok((rest, TokenKind::Ident));
    }
    if let Ok((rest, p)) = punct(input) {
        return Ok((rest, TokenKind::Punct(p)));
    }
    let len = first.len_utf8();
    Err(LexError {
        kind: LexErrorKind::Stray(first),
        len,
        skip: len,
    })
}

fn punct(input: &str) -> IResult<&str, Punct> {
    use Punct::*;
    // Two-character operators first, so `<=` is never `<` then `=`.
    let double = alt((
        value(OrOr, tag("||")),
        value(AndAnd, tag("&&")),
        value(EqEq, tag("==")),
        value(NotEq, tag("!=")),
        value(Le, tag("<=")),
        value(Ge, tag(">=")),
    ));
    let single = alt((
        value(Semi, char(';')),
        value(Comma, char(',')),
        value(Assign, char('=')),
        value(LBrace, char('{')),
        value(RBrace, char('}')),
        value(LBracket, char('[')),
        value(RBracket, char(']')),
        value(LParen, char('(')),
        value(RParen, char(')')),
        value(Question, char('?')),
        value(Colon, char(':')),
        value(Lt, char('<')),
        value(Gt, char('>')),
        value(Plus, char('+')),
        value(Minus, char('-')),
        value(Star, char('*')),
        value(Slash, char('/')),
        value(Percent, char('%')),
        value(Bang, char('!')),
    ));
    alt((double, single)).parse(input)
}

/// `_` is allowed only between two digits (L2), wherever digits appear.
fn digits(input: &str) -> IResult<&str, &str> {
    recognize((digit1, many0((char('_'), digit1)))).parse(input)
}

/// L2: `digits ('.' digits)? ([eE] [+-]? digits)?`.
fn number_body(input: &str) -> IResult<&str, &str> {
    recognize((
        digits,
        opt((char('.'), digits)),
        opt((one_of("eE"), opt(one_of("+-")), digits)),
    ))
    .parse(input)
}

/// The number `text` (a whole `number_body`), unless something word-like follows it.
fn number<'a>(text: &'a str, rest: &'a str) -> Result<(&'a str, TokenKind), LexError> {
    let next = rest
        .chars()
        .next()
        .filter(|&c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if let Some(next) = next {
        let has_exponent = text.contains(['e', 'E']);
        let reason = match next {
            '_' => "`_` is allowed only between two digits",
            '.' if text.contains('.') || has_exponent => {
                "a number has at most one `.`, and none in its exponent"
            }
            '.' => "a `.` in a number must be followed by digits",
            'e' | 'E' if !has_exponent => "an exponent needs digits after the `e`",
            _ => "a number must not run into a name; put an operator or a space between them",
        };
        return Err(malformed(text, rest, reason));
    }
    let cleaned: String = text.chars().filter(|&c| c != '_').collect();
    // Rust's parser accepts every L2 shape and gives `inf` for out-of-range values,
    // which is exactly L2's "too large is inf".
    match cleaned.parse::<f64>() {
        Ok(v) => Ok((rest, TokenKind::Number(v))),
        Err(_) => Err(malformed(text, rest, "not a decimal number")),
    }
}

/// The malformed number `text` followed by `tail`: its span covers the word-like part
/// of the tail too, so `1e+` or `12abc` is one error, not an error and stray tokens.
fn malformed(text: &str, tail: &str, reason: &'static str) -> LexError {
    let mut previous = text.chars().last();
    let extra = tail
        .char_indices()
        .find(|&(_, c)| {
            let word_like = c.is_ascii_alphanumeric() || c == '_' || c == '.';
            let exponent_sign = matches!(c, '+' | '-') && matches!(previous, Some('e' | 'E'));
            previous = Some(c);
            !(word_like || exponent_sign)
        })
        .map_or(tail.len(), |(i, _)| i);
    let len = text.len() + extra;
    LexError {
        kind: LexErrorKind::MalformedNumber(reason),
        len,
        skip: len,
    }
}
