//! The parser (D1–D5, E1, E7): the lexer's tokens to a `Spec` (or to one expression,
//! `parse_expression`), written as nom combinators over a token slice. It owns the
//! grammar only: which words are keywords where, precedence, spans, error wording and
//! recovery. It must not resolve names, evaluate, or reject what the grammar allows
//! (repeated options, options of the other stage kind, array sizes: all `sema`'s). It
//! never panics, and it bounds both its own recursion and the height of every
//! expression tree at `MAX_DEPTH`, so no later phase that walks an expression
//! recursively can overflow the stack either.
//!
//! Spans: a parenthesised expression's span includes its parentheses (so a binary span,
//! from its left operand's start to its right operand's end, always covers balanced
//! text); the parentheses of `time (…)`, `spill … (…) when (…)` and key lists belong
//! to the option, not to the expression inside.
//!
//! This file is long because it is one grammar: every production is a small nom
//! combinator, and the precedence climb, the option parsers and the recovery share
//! one token-slice vocabulary that a split would have to export.

use nom::branch::alt;
use nom::combinator::{cut, map, opt};
use nom::error::{ContextError, ErrorKind, ParseError, context};
use nom::multi::{many0, separated_list1};
use nom::sequence::preceded;
use nom::{IResult, Input, Needed, Parser};

use crate::syntax::ast::*;
use crate::syntax::lexer::{Punct, Token, TokenKind, lex};
use crate::syntax::{Span, SyntaxError};

/// The deepest expression tree accepted, counting parentheses as a level too. At this
/// depth an unoptimised build needs under 1 MiB of stack (the tests run it on 2 MiB).
const MAX_DEPTH: u32 = 200;
/// Parsing stops after this many errors; a file this broken gains nothing from more.
const MAX_ERRORS: usize = 20;

/// Parses a whole spec, or gives every lexical and parse error found (in source order,
/// at most `MAX_ERRORS`).
pub fn parse(source: &str) -> Result<Spec, Vec<SyntaxError>> {
    let (tokens, mut errors) = lex(source);
    let mut input = Tokens(&tokens);
    let mut decls = Vec::new();
    let mut parse_errors = 0;
    while !input.at_eof() && parse_errors < MAX_ERRORS {
        match decl(input) {
            Ok((rest, d)) => {
                decls.push(d);
                input = rest;
            }
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                let error_at = input.len().saturating_sub(e.remaining);
                if let Some(error) = e.into_syntax_error() {
                    errors.push(error);
                    parse_errors += 1;
                }
                input = recover(input, error_at);
            }
            // Every parser here is a complete-input parser; none asks for more.
            Err(nom::Err::Incomplete(_)) => break,
        }
    }
    if errors.is_empty() {
        return Ok(Spec { decls });
    }
    errors.sort_by_key(|e| e.span().start);
    errors.truncate(MAX_ERRORS);
    Err(errors)
}

/// Parses a text that is one expression and nothing more (`poolc fit --time` takes a
/// stage `time` on its own), or gives its lexical errors and the parse error, in
/// source order. The grammar, precedence and depth bound are the spec's own.
pub fn parse_expression(source: &str) -> Result<Expr, Vec<SyntaxError>> {
    let (tokens, mut errors) = lex(source);
    match whole_expression(Tokens(&tokens)) {
        Ok((_, e)) if errors.is_empty() => return Ok(e),
        Ok(_) | Err(nom::Err::Incomplete(_)) => {}
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => errors.extend(e.into_syntax_error()),
    }
    errors.sort_by_key(|e| e.span().start);
    Err(errors)
}

/// An expression that must end the input.
fn whole_expression(i: Tokens<'_>) -> PResult<'_, Expr> {
    let (rest, e) = expression(i)?;
    if rest.at_eof() {
        Ok((rest, e))
    } else {
        let end = "an operator or the end of the expression";
        Err(nom::Err::Failure(PError::expected(rest, end)))
    }
}

/// Skips the declaration that starts `input` and failed at token `error_at` (relative
/// to `input`): to just after its matching `}` or the next `;` outside braces, or, from
/// the error on, to the start of a new declaration (so a forgotten `;` or `}` does not
/// swallow the next declaration). Always skips at least one token.
fn recover(input: Tokens<'_>, error_at: usize) -> Tokens<'_> {
    let tokens = input.0;
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate() {
        let rest = Tokens(tokens.get(j..).unwrap_or_default());
        if j > 0 && j >= error_at && starts_decl(rest.0) {
            return rest;
        }
        match t.kind {
            TokenKind::Eof => return rest,
            TokenKind::Punct(Punct::LBrace) => depth += 1,
            TokenKind::Punct(Punct::RBrace) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return rest.advance();
                }
            }
            TokenKind::Punct(Punct::Semi) if depth == 0 => return rest.advance(),
            _ => {}
        }
    }
    Tokens(&[])
}

/// The start of a declaration: `const|param NAME =`, `stage|pool NAME {|[` or
/// `session {`. No expression or option contains these sequences (two adjacent names
/// never occur there), so they are safe places to resume.
fn starts_decl(tokens: &[Token<'_>]) -> bool {
    let punct = |t: &Token<'_>, p: Punct| t.kind == TokenKind::Punct(p);
    match tokens {
        [word, ..] if word.kind != TokenKind::Ident => false,
        [word, brace, ..] if word.text == "session" => punct(brace, Punct::LBrace),
        [word, name, next, ..] if name.kind == TokenKind::Ident => match word.text {
            "const" | "param" => punct(next, Punct::Assign),
            "stage" | "pool" => punct(next, Punct::LBrace) || punct(next, Punct::LBracket),
            _ => false,
        },
        _ => false,
    }
}

// ---------------------------------------------------------------------------------
// nom plumbing: the token input and the error type.

/// The token stream as nom input. It always ends with the `Eof` token, which no parser
/// consumes, so there is always a token to report an error at.
#[derive(Clone, Copy, Debug)]
struct Tokens<'a>(&'a [Token<'a>]);

impl<'a> Tokens<'a> {
    fn first(&self) -> Option<&'a Token<'a>> {
        self.0.first()
    }

    fn advance(self) -> Tokens<'a> {
        Tokens(self.0.get(1..).unwrap_or_default())
    }

    fn at_eof(&self) -> bool {
        matches!(self.first().map(|t| t.kind), None | Some(TokenKind::Eof))
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

impl<'a> Input for Tokens<'a> {
    type Item = &'a Token<'a>;
    type Iter = std::slice::Iter<'a, Token<'a>>;
    type IterIndices = std::iter::Enumerate<std::slice::Iter<'a, Token<'a>>>;

    fn input_len(&self) -> usize {
        self.0.len()
    }

    fn take(&self, index: usize) -> Self {
        Tokens(self.0.get(..index).unwrap_or(self.0))
    }

    fn take_from(&self, index: usize) -> Self {
        Tokens(self.0.get(index..).unwrap_or_default())
    }

    fn take_split(&self, index: usize) -> (Self, Self) {
        (self.take_from(index), self.take(index))
    }

    fn position<P>(&self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool,
    {
        self.0.iter().position(predicate)
    }

    fn iter_elements(&self) -> Self::Iter {
        self.0.iter()
    }

    fn iter_indices(&self) -> Self::IterIndices {
        self.0.iter().enumerate()
    }

    fn slice_index(&self, count: usize) -> Result<usize, Needed> {
        if self.0.len() >= count {
            Ok(count)
        } else {
            Err(Needed::new(count - self.0.len()))
        }
    }
}

/// A parse error while parsing: where (as tokens remaining, so the furthest of two
/// alternatives is the one with fewer) and what.
#[derive(Debug)]
struct PError {
    remaining: usize,
    span: Span,
    /// Boxed to keep every `PResult` small: results sit in every frame of the
    /// recursive descent, and their size is what bounds the nesting a stack can take.
    kind: Box<PErrorKind>,
}

#[derive(Debug)]
enum PErrorKind {
    Expected {
        expected: String,
        context: &'static str,
        found: String,
        note: Option<&'static str>,
    },
    TooDeep,
    /// The offending token is a lexical error, already reported by the lexer.
    Lexical,
}

type PResult<'a, O> = IResult<Tokens<'a>, O, PError>;

impl PError {
    fn expected(input: Tokens<'_>, expected: impl Into<String>) -> PError {
        let (span, kind) = match input.first() {
            Some(t) if t.kind == TokenKind::Error => (t.span, PErrorKind::Lexical),
            Some(t) => {
                let note = match (t.kind, t.text) {
                    (TokenKind::Ident, "inf") => {
                        Some("`inf` is always the number literal, so it cannot be a name (L1)")
                    }
                    (TokenKind::Ident, "draw") => Some(
                        "`draw` is always the draw form `draw(…)`, so it cannot be a name (L1, E7)",
                    ),
                    _ => None,
                };
                let found = describe(t);
                (
                    t.span,
                    PErrorKind::Expected {
                        expected: expected.into(),
                        context: "",
                        found,
                        note,
                    },
                )
            }
            None => {
                let found = "end of input".to_string();
                (
                    Span::default(),
                    PErrorKind::Expected {
                        expected: expected.into(),
                        context: "",
                        found,
                        note: None,
                    },
                )
            }
        };
        PError {
            remaining: input.len(),
            span,
            kind: Box::new(kind),
        }
    }

    fn too_deep(input: Tokens<'_>) -> PError {
        let span = input.first().map_or(Span::default(), |t| t.span);
        PError {
            remaining: input.len(),
            span,
            kind: Box::new(PErrorKind::TooDeep),
        }
    }

    fn with_note(mut self, note: &'static str) -> PError {
        if let PErrorKind::Expected { note: slot, .. } = &mut *self.kind {
            *slot = Some(note);
        }
        self
    }

    fn into_syntax_error(self) -> Option<SyntaxError> {
        let span = self.span;
        match *self.kind {
            PErrorKind::Expected {
                expected,
                context,
                found,
                note,
            } => Some(SyntaxError::Expected {
                span,
                expected,
                context: context.to_string(),
                found,
                note,
            }),
            PErrorKind::TooDeep => Some(SyntaxError::TooDeep {
                span,
                limit: MAX_DEPTH,
            }),
            PErrorKind::Lexical => None,
        }
    }
}

/// How an error message names a token.
fn describe(t: &Token<'_>) -> String {
    const LONGEST: usize = 40;
    match t.kind {
        TokenKind::Eof => "end of input".to_string(),
        _ if t.text.chars().count() > LONGEST => {
            format!("`{}…`", t.text.chars().take(LONGEST).collect::<String>())
        }
        _ => format!("`{}`", t.text),
    }
}

impl ParseError<Tokens<'_>> for PError {
    fn from_error_kind(input: Tokens<'_>, _: ErrorKind) -> Self {
        PError::expected(input, "something else")
    }

    fn append(_: Tokens<'_>, _: ErrorKind, other: Self) -> Self {
        other
    }

    fn or(self, other: Self) -> Self {
        if other.remaining < self.remaining {
            other
        } else {
            self
        }
    }
}

/// nom's `context` says where an expectation arose ("after `cap`"); only an error at
/// the very start of the wrapped parser takes it, and the innermost context wins.
impl ContextError<Tokens<'_>> for PError {
    fn add_context(input: Tokens<'_>, ctx: &'static str, mut other: Self) -> Self {
        if other.remaining == input.len()
            && let PErrorKind::Expected { context, .. } = &mut *other.kind
            && context.is_empty()
        {
            *context = ctx;
        }
        other
    }
}

/// `p`, with a failure to even start reported as "expected `expected`" instead of the
/// innermost alternative's expectation.
fn label<'a, O>(
    expected: &'static str,
    mut p: impl Parser<Tokens<'a>, Output = O, Error = PError>,
) -> impl FnMut(Tokens<'a>) -> PResult<'a, O> {
    move |i: Tokens<'a>| {
        p.parse(i).map_err(|e| match e {
            nom::Err::Error(e) if e.remaining == i.len() => {
                nom::Err::Error(PError::expected(i, expected))
            }
            other => other,
        })
    }
}

/// `p`, with `note` added to an error at its start.
fn noted<'a, O>(
    note: &'static str,
    mut p: impl Parser<Tokens<'a>, Output = O, Error = PError>,
) -> impl FnMut(Tokens<'a>) -> PResult<'a, O> {
    move |i: Tokens<'a>| {
        p.parse(i).map_err(|e| {
            e.map(|e| {
                if e.remaining == i.len() {
                    e.with_note(note)
                } else {
                    e
                }
            })
        })
    }
}

/// One token that `accept` maps to a value.
fn token<'a, O>(
    expected: &'static str,
    accept: impl Fn(&'a Token<'a>) -> Option<O>,
) -> impl FnMut(Tokens<'a>) -> PResult<'a, O> {
    move |i: Tokens<'a>| match i.first().and_then(&accept) {
        Some(o) => Ok((i.advance(), o)),
        None => Err(nom::Err::Error(PError::expected(i, expected))),
    }
}

fn punct<'a>(p: Punct, expected: &'static str) -> impl FnMut(Tokens<'a>) -> PResult<'a, Span> {
    token(expected, move |t| {
        (t.kind == TokenKind::Punct(p)).then_some(t.span)
    })
}

fn semi<'a>() -> impl FnMut(Tokens<'a>) -> PResult<'a, Span> {
    punct(Punct::Semi, "`;`")
}

/// A word the grammar expects at this point (L1: keywords are reserved only there).
fn keyword<'a>(word: &'static str) -> impl FnMut(Tokens<'a>) -> PResult<'a, Span> {
    move |i: Tokens<'a>| match i.first() {
        Some(t) if t.kind == TokenKind::Ident && t.text == word => Ok((i.advance(), t.span)),
        _ => Err(nom::Err::Error(PError::expected(i, format!("`{word}`")))),
    }
}

/// A name: any identifier but `inf` and `draw`, which are always the literal and the
/// draw form (L1).
fn name<'a>(expected: &'static str) -> impl FnMut(Tokens<'a>) -> PResult<'a, Ident> {
    token(expected, |t| {
        (t.kind == TokenKind::Ident && t.text != "inf" && t.text != "draw").then(|| Ident {
            name: t.text.to_string(),
            span: t.span,
        })
    })
}

// ---------------------------------------------------------------------------------
// Declarations (D1–D5).

fn decl(i: Tokens<'_>) -> PResult<'_, Decl> {
    label(
        "a declaration (`const`, `param`, `session`, `stage` or `pool`)",
        alt((
            map(
                value_decl(
                    "const",
                    "after the constant's name",
                    "after the constant's value",
                ),
                Decl::Const,
            ),
            map(
                value_decl(
                    "param",
                    "after the parameter's name",
                    "after the parameter's value",
                ),
                Decl::Param,
            ),
            map(session_decl, Decl::Session),
            map(stage_decl, Decl::Stage),
            map(pool_decl, Decl::Pool),
        )),
    )(i)
}

/// `const NAME = expr;` (D1) and `param NAME = expr;` (D2).
fn value_decl<'a>(
    word: &'static str,
    after_name: &'static str,
    after_value: &'static str,
) -> impl FnMut(Tokens<'a>) -> PResult<'a, ValueDecl> {
    move |i| {
        let (i, start) = keyword(word)(i)?;
        let after_word = if word == "const" {
            "after `const`"
        } else {
            "after `param`"
        };
        let (i, (name, _, value, end)) = cut((
            context(after_word, name("a name")),
            context(after_name, punct(Punct::Assign, "`=`")),
            context("after `=`", expression),
            context(after_value, semi()),
        ))
        .parse(i)?;
        Ok((
            i,
            ValueDecl {
                name,
                value,
                span: start.to(end),
            },
        ))
    }
}

/// `session { attr; attr = expr; … }` (D3).
fn session_decl(i: Tokens<'_>) -> PResult<'_, SessionDecl> {
    let (i, start) = keyword("session")(i)?;
    let (i, (_, attrs, end)) = cut((
        context("after `session`", punct(Punct::LBrace, "`{`")),
        many0(attr_decl),
        context(
            "in the `session` block",
            label("an attribute name or `}`", punct(Punct::RBrace, "`}`")),
        ),
    ))
    .parse(i)?;
    Ok((
        i,
        SessionDecl {
            attrs,
            span: start.to(end),
        },
    ))
}

fn attr_decl(i: Tokens<'_>) -> PResult<'_, AttrDecl> {
    let (i, name) = name("an attribute name")(i)?;
    let with_default = preceded(
        punct(Punct::Assign, "`=`"),
        cut((
            context("after `=`", expression),
            context("after the attribute's default", semi()),
        )),
    );
    let (i, (default, end)) = cut(context(
        "after the attribute name",
        label(
            "`=` or `;`",
            alt((
                map(semi(), |end| (None, end)),
                map(with_default, |(e, end)| (Some(e), end)),
            )),
        ),
    ))
    .parse(i)?;
    let span = name.span.to(end);
    Ok((
        i,
        AttrDecl {
            name,
            default,
            span,
        },
    ))
}

/// `NAME [ '[' count ']' ] {`, shared by stages and pools.
fn family_header<'a>(
    after_word: &'static str,
    after_name: &'static str,
) -> impl FnMut(Tokens<'a>) -> PResult<'a, (Ident, Option<Expr>)> {
    move |i| {
        let (i, name) = context(after_word, name("a name")).parse(i)?;
        let count = preceded(
            punct(Punct::LBracket, "`[`"),
            cut((
                context("after `[`", expression),
                context("after the count", punct(Punct::RBracket, "`]`")),
            )),
        );
        let (i, count) = opt(count).parse(i)?;
        let (i, _) = match count {
            Some(_) => context("after the count", punct(Punct::LBrace, "`{`")).parse(i)?,
            None => {
                context(after_name, label("`[` or `{`", punct(Punct::LBrace, "`{`"))).parse(i)?
            }
        };
        Ok((i, (name, count.map(|(count, _)| count))))
    }
}

/// `stage NAME [ '[' N ']' ] { step|link; options… }` (D4).
fn stage_decl(i: Tokens<'_>) -> PResult<'_, StageDecl> {
    let (i, start) = keyword("stage")(i)?;
    let stage_kind = alt((
        map(keyword("step"), |span| (StageKind::Step, span)),
        map(keyword("link"), |span| (StageKind::Link, span)),
    ));
    let (i, ((name, count), (kind, kind_span), _, options, end)) = cut((
        family_header("after `stage`", "after the stage name"),
        context(
            "first in a stage",
            label("the stage kind `step` or `link`", stage_kind),
        ),
        context("after the stage kind", semi()),
        many0(stage_option),
        label(
            "a stage option (`budget`, `seats`, `chunk`, `serve`, `time`, `rate`) or `}`",
            punct(Punct::RBrace, "`}`"),
        ),
    ))
    .parse(i)?;
    Ok((
        i,
        StageDecl {
            name,
            count,
            kind,
            kind_span,
            options,
            span: start.to(end),
        },
    ))
}

fn stage_option(i: Tokens<'_>) -> PResult<'_, StageOption> {
    use StageOptionKind as K;
    let serve = |i| {
        let (i, start) = keyword("serve")(i)?;
        let (i, (_, _, end)) = cut((
            context("after `serve`", keyword("exclusive")),
            context("after `serve exclusive`", keyword("prefill")),
            context("after the `serve` option", semi()),
        ))
        .parse(i)?;
        Ok((
            i,
            StageOption {
                kind: K::ServeExclusivePrefill,
                span: start.to(end),
            },
        ))
    };
    let time = |i| {
        let (i, start) = keyword("time")(i)?;
        let (i, (_, e, _, end)) = cut((
            context("after `time`", punct(Punct::LParen, "`(`")),
            context("after `(`", expression),
            context("after the `time` expression", punct(Punct::RParen, "`)`")),
            context("after the `time` option", semi()),
        ))
        .parse(i)?;
        Ok((
            i,
            StageOption {
                kind: K::Time(e),
                span: start.to(end),
            },
        ))
    };
    let option = |kind, span| StageOption { kind, span };
    alt((
        expr_option(
            "budget",
            "after `budget`",
            "after the `budget` option",
            K::Budget,
            option,
        ),
        expr_option(
            "seats",
            "after `seats`",
            "after the `seats` option",
            K::Seats,
            option,
        ),
        expr_option(
            "chunk",
            "after `chunk`",
            "after the `chunk` option",
            K::Chunk,
            option,
        ),
        expr_option(
            "rate",
            "after `rate`",
            "after the `rate` option",
            K::Rate,
            option,
        ),
        serve,
        time,
    ))
    .parse(i)
}

/// `word expr;` as the option `option(kind(expr), span)`: stage and pool options
/// share this form and differ only in the node they build.
fn expr_option<'a, K, O>(
    word: &'static str,
    after_word: &'static str,
    after_option: &'static str,
    kind: fn(Expr) -> K,
    option: fn(K, Span) -> O,
) -> impl FnMut(Tokens<'a>) -> PResult<'a, O> {
    move |i| {
        let (i, start) = keyword(word)(i)?;
        let (i, (e, end)) = cut((
            context(after_word, expression),
            context(after_option, semi()),
        ))
        .parse(i)?;
        Ok((i, option(kind(e), start.to(end))))
    }
}

/// `pool NAME [ '[' N ']' ] { options }` (seed, D5).
fn pool_decl(i: Tokens<'_>) -> PResult<'_, PoolDecl> {
    let (i, start) = keyword("pool")(i)?;
    let (i, ((name, count), options, end)) = cut((
        family_header("after `pool`", "after the pool name"),
        many0(pool_option),
        label(
            "a pool option (`cap`, `block`, `evict`, `preempt`, `requeue`, `queue`, `admit`, `spill`, `route`, `handoff`, `fair`) or `}`",
            punct(Punct::RBrace, "`}`"),
        ),
    ))
    .parse(i)?;
    Ok((
        i,
        PoolDecl {
            name,
            count,
            options,
            span: start.to(end),
        },
    ))
}

fn pool_option(i: Tokens<'_>) -> PResult<'_, PoolOption> {
    use PoolOptionKind as K;
    let evict = choice_option(
        "evict",
        "after `evict`",
        "`lru` or `by`",
        "after the `evict` option",
        |i| {
            alt((
                map(keyword("lru"), |_| K::EvictLru),
                map(key_list, K::EvictBy),
            ))
            .parse(i)
        },
    );
    let preempt = choice_option(
        "preempt",
        "after `preempt`",
        "`none`, `lifo` or `by`",
        "after the `preempt` option",
        |i| {
            alt((
                map(keyword("none"), |_| K::PreemptNone),
                map(keyword("lifo"), |_| K::PreemptLifo),
                map(key_list, K::PreemptBy),
            ))
            .parse(i)
        },
    );
    let queue = choice_option(
        "queue",
        "after `queue`",
        "`fifo` or `by`",
        "after the `queue` option",
        |i| {
            alt((
                map(keyword("fifo"), |_| K::QueueFifo),
                map(key_list, K::QueueBy),
            ))
            .parse(i)
        },
    );
    let requeue = choice_option(
        "requeue",
        "after `requeue`",
        "`keyed`",
        "after the `requeue` option",
        |i| map(keyword("keyed"), |_| K::RequeueKeyed).parse(i),
    );
    let admit = |i| {
        let (i, start) = keyword("admit")(i)?;
        let (i, (_, stage, end)) = cut((
            context("after `admit`", keyword("via")),
            context("after `admit via`", name("a stage name")),
            context("after the `admit` option", semi()),
        ))
        .parse(i)?;
        Ok((
            i,
            PoolOption {
                kind: K::AdmitVia(stage),
                span: start.to(end),
            },
        ))
    };
    let option = |kind, span| PoolOption { kind, span };
    alt((
        expr_option(
            "cap",
            "after `cap`",
            "after the `cap` option",
            K::Cap,
            option,
        ),
        expr_option(
            "block",
            "after `block`",
            "after the `block` option",
            K::Block,
            option,
        ),
        evict,
        preempt,
        requeue,
        queue,
        admit,
        spill,
        route,
        handoff,
        fair,
    ))
    .parse(i)
}

/// `route by (keys) [every T] [remember N];` (R22–R24).
fn route(i: Tokens<'_>) -> PResult<'_, PoolOption> {
    let (i, start) = keyword("route")(i)?;
    let (i, keys) = cut(context("after `route`", label("`by`", key_list))).parse(i)?;
    let (i, every) = opt(|i| {
        let (i, _) = keyword("every")(i)?;
        cut(context("after `every`", expression)).parse(i)
    })
    .parse(i)?;
    let (i, remember) = opt(|i| {
        let (i, _) = keyword("remember")(i)?;
        cut(context("after `remember`", expression)).parse(i)
    })
    .parse(i)?;
    let (i, end) = cut(context(
        "after the `route` option",
        label("`every`, `remember` or `;`", semi()),
    ))
    .parse(i)?;
    let kind = PoolOptionKind::Route(RouteClause {
        keys,
        every,
        remember,
    });
    Ok((
        i,
        PoolOption {
            kind,
            span: start.to(end),
        },
    ))
}

/// `word choice;` where `choice` is one of a few fixed forms.
fn choice_option<'a>(
    word: &'static str,
    after_word: &'static str,
    choices: &'static str,
    after_option: &'static str,
    choice: impl Fn(Tokens<'a>) -> PResult<'a, PoolOptionKind>,
) -> impl FnMut(Tokens<'a>) -> PResult<'a, PoolOption> {
    move |i| {
        let (i, start) = keyword(word)(i)?;
        let (i, (kind, end)) = cut((
            context(after_word, label(choices, &choice)),
            context(after_option, semi()),
        ))
        .parse(i)?;
        Ok((
            i,
            PoolOption {
                kind,
                span: start.to(end),
            },
        ))
    }
}

/// `spill TIER via LINK (work) when (pred);`
fn spill(i: Tokens<'_>) -> PResult<'_, PoolOption> {
    let (i, start) = keyword("spill")(i)?;
    let (i, (tier, _, link, _, work, _, _, _, pred, _, end)) = cut((
        context("after `spill`", name("a pool name")),
        context("after the spill tier", keyword("via")),
        context("after `via`", name("a stage name")),
        context("before the spill work", punct(Punct::LParen, "`(`")),
        context("after `(`", expression),
        context("after the spill work", punct(Punct::RParen, "`)`")),
        context("after the spill work", keyword("when")),
        context("after `when`", punct(Punct::LParen, "`(`")),
        context("after `(`", expression),
        context("after the spill predicate", punct(Punct::RParen, "`)`")),
        context("after the `spill` option", semi()),
    ))
    .parse(i)?;
    let kind = PoolOptionKind::Spill(SpillClause {
        tier,
        link,
        work,
        pred,
    });
    Ok((
        i,
        PoolOption {
            kind,
            span: start.to(end),
        },
    ))
}

/// `fair ATTR (prefill, decode) [weight ATTR];` (R30).
fn fair(i: Tokens<'_>) -> PResult<'_, PoolOption> {
    let (i, start) = keyword("fair")(i)?;
    let (i, (by, _, prefill, _, decode, _)) = cut((
        context("after `fair`", name("a session attribute")),
        context("before the prices", punct(Punct::LParen, "`(`")),
        context("after `(`", expression),
        context("after the prefill price", punct(Punct::Comma, "`,`")),
        context("after `,`", expression),
        context("after the decode price", punct(Punct::RParen, "`)`")),
    ))
    .parse(i)?;
    let (i, weight) = opt(|i| {
        let (i, _) = keyword("weight")(i)?;
        cut(context("after `weight`", name("a session attribute"))).parse(i)
    })
    .parse(i)?;
    let (i, end) = cut(context(
        "after the `fair` option",
        label("`weight` or `;`", semi()),
    ))
    .parse(i)?;
    let kind = PoolOptionKind::Fair(FairClause {
        by,
        prefill,
        decode,
        weight,
    });
    Ok((
        i,
        PoolOption {
            kind,
            span: start.to(end),
        },
    ))
}

/// `handoff POOL via LINK (work);` (R25).
fn handoff(i: Tokens<'_>) -> PResult<'_, PoolOption> {
    let (i, start) = keyword("handoff")(i)?;
    let (i, (target, _, link, _, work, _, end)) = cut((
        context("after `handoff`", name("a pool name")),
        context("after the handoff target", keyword("via")),
        context("after `via`", name("a stage name")),
        context("before the handoff work", punct(Punct::LParen, "`(`")),
        context("after `(`", expression),
        context("after the handoff work", punct(Punct::RParen, "`)`")),
        context("after the `handoff` option", semi()),
    ))
    .parse(i)?;
    let kind = PoolOptionKind::Handoff(HandoffClause { target, link, work });
    Ok((
        i,
        PoolOption {
            kind,
            span: start.to(end),
        },
    ))
}

/// `by (k1, k2, …)`: one key or more (E5).
fn key_list(i: Tokens<'_>) -> PResult<'_, Vec<Expr>> {
    let (i, _) = keyword("by")(i)?;
    let (i, (_, keys, _)) = cut((
        context("after `by`", punct(Punct::LParen, "`(`")),
        separated_list1(
            punct(Punct::Comma, "`,`"),
            cut(context("in the key list", expression)),
        ),
        context(
            "in the key list",
            label("`,` or `)`", punct(Punct::RParen, "`)`")),
        ),
    ))
    .parse(i)?;
    Ok((i, keys))
}

// ---------------------------------------------------------------------------------
// Expressions (E1, E7). Each parser returns the expression with its tree height.
//
// The recursive spine (conditional → binary → unary → primary → back) calls itself
// directly and applies `commit` to results instead of wrapping the recursion in
// `cut(context(…))`: in an unoptimised build every combinator layer is a stack frame
// of its own, and the frames per nesting level are what `MAX_DEPTH` must fit into a
// thread's stack.

/// An expression, boxed (results are moved through every frame of the spine, so they
/// stay two words), and the height of its tree.
type Node = (Box<Expr>, u32);

fn expression(i: Tokens<'_>) -> PResult<'_, Expr> {
    map(|i| conditional(i, 1), |(e, _)| *e).parse(i)
}

/// `cut(context(ctx, …))` for a result already computed from input `start`.
fn commit<'a, O>(ctx: &'static str, start: Tokens<'a>, result: PResult<'a, O>) -> PResult<'a, O> {
    result.map_err(|e| match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => {
            nom::Err::Failure(PError::add_context(start, ctx, e))
        }
        incomplete => incomplete,
    })
}

/// Fails when parsing at `depth` would exceed `MAX_DEPTH`: it keeps the parser's own
/// recursion bounded whatever the input.
fn guard(i: Tokens<'_>, depth: u32) -> Result<(), nom::Err<PError>> {
    if depth > MAX_DEPTH {
        Err(nom::Err::Failure(PError::too_deep(i)))
    } else {
        Ok(())
    }
}

/// Builds a node of the given height, unless the tree would be too deep; `at` is the
/// input at the token that makes the node (its operator or name).
fn node(kind: ExprKind, span: Span, height: u32, at: Tokens<'_>) -> Result<Node, nom::Err<PError>> {
    if height > MAX_DEPTH {
        return Err(nom::Err::Failure(PError::too_deep(at)));
    }
    Ok((Box::new(Expr { kind, span }), height))
}

/// `c ? a : b`, right-associative and loosest; the middle operand is a whole
/// expression, as in C.
fn conditional(i: Tokens<'_>, depth: u32) -> PResult<'_, Node> {
    guard(i, depth)?;
    let (rest, cond) = binary(i, depth, 1)?;
    match punct(Punct::Question, "`?`")(rest) {
        Ok((after, _)) => branches(rest, after, cond, depth),
        Err(_) => Ok((rest, cond)),
    }
}

/// The `a : b` of `c ? a : b`, after the `?` at `question`. (Apart from `conditional`
/// so that parentheses, which pass through `conditional`, do not pay for its frame.)
fn branches<'a>(question: Tokens<'a>, i: Tokens<'a>, cond: Node, depth: u32) -> PResult<'a, Node> {
    let (i, (then, then_height)) = commit("after `?`", i, conditional(i, depth + 1))?;
    let (i, _) = commit("after the `?` branch", i, punct(Punct::Colon, "`:`")(i))?;
    let (i, (other, other_height)) = commit("after `:`", i, conditional(i, depth + 1))?;
    let (cond, cond_height) = cond;
    let span = cond.span.to(other.span);
    let height = 1 + cond_height.max(then_height).max(other_height);
    Ok((
        i,
        node(
            ExprKind::Conditional(cond, then, other),
            span,
            height,
            question,
        )?,
    ))
}

fn binary_op<'a>(min_precedence: u8) -> impl FnMut(Tokens<'a>) -> PResult<'a, BinaryOp> {
    token("an operator", move |t| {
        let op = match t.kind {
            TokenKind::Punct(p) => match p {
                Punct::OrOr => BinaryOp::Or,
                Punct::AndAnd => BinaryOp::And,
                Punct::EqEq => BinaryOp::Eq,
                Punct::NotEq => BinaryOp::Ne,
                Punct::Lt => BinaryOp::Lt,
                Punct::Le => BinaryOp::Le,
                Punct::Gt => BinaryOp::Gt,
                Punct::Ge => BinaryOp::Ge,
                Punct::Plus => BinaryOp::Add,
                Punct::Minus => BinaryOp::Sub,
                Punct::Star => BinaryOp::Mul,
                Punct::Slash => BinaryOp::Div,
                Punct::Percent => BinaryOp::Rem,
                _ => return None,
            },
            _ => return None,
        };
        (op.precedence() >= min_precedence).then_some(op)
    })
}

/// Where a missing right operand is reported.
fn after_operator(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Or => "after `||`",
        BinaryOp::And => "after `&&`",
        BinaryOp::Eq => "after `==`",
        BinaryOp::Ne => "after `!=`",
        BinaryOp::Lt => "after `<`",
        BinaryOp::Le => "after `<=`",
        BinaryOp::Gt => "after `>`",
        BinaryOp::Ge => "after `>=`",
        BinaryOp::Add => "after `+`",
        BinaryOp::Sub => "after `-`",
        BinaryOp::Mul => "after `*`",
        BinaryOp::Div => "after `/`",
        BinaryOp::Rem => "after `%`",
    }
}

/// Binary operators of precedence `min_precedence` and tighter, by precedence
/// climbing: each operator's right operand takes only tighter operators, so every
/// level is left-associative.
fn binary(i: Tokens<'_>, depth: u32, min_precedence: u8) -> PResult<'_, Node> {
    let (mut i, mut lhs) = unary(i, depth)?;
    while let Ok((after_op, op)) = binary_op(min_precedence)(i) {
        (i, lhs) = binary_rhs(i, after_op, op, lhs, depth)?;
    }
    Ok((i, lhs))
}

/// `lhs op rhs`, with `op` at `at` and the right operand at `i`.
fn binary_rhs<'a>(
    at: Tokens<'a>,
    i: Tokens<'a>,
    op: BinaryOp,
    lhs: Node,
    depth: u32,
) -> PResult<'a, Node> {
    let rhs = binary(i, depth + 1, op.precedence() + 1);
    let (i, (rhs, rhs_height)) = commit(after_operator(op), i, rhs)?;
    let (lhs, lhs_height) = lhs;
    let span = lhs.span.to(rhs.span);
    Ok((
        i,
        node(
            ExprKind::Binary(op, lhs, rhs),
            span,
            1 + lhs_height.max(rhs_height),
            at,
        )?,
    ))
}

/// Prefix `-` and `!`, which may repeat (`--x`, `!-x`).
fn unary(i: Tokens<'_>, depth: u32) -> PResult<'_, Node> {
    guard(i, depth)?;
    let op = |t: &Token<'_>| match t.kind {
        TokenKind::Punct(Punct::Minus) => Some(UnaryOp::Neg),
        TokenKind::Punct(Punct::Bang) => Some(UnaryOp::Not),
        _ => None,
    };
    match token("`-` or `!`", op)(i) {
        Ok((rest, op)) => prefixed(i, rest, op, depth),
        Err(_) => primary(i, depth),
    }
}

/// `op operand`, with `op` at `at` and the operand at `i`.
fn prefixed<'a>(at: Tokens<'a>, i: Tokens<'a>, op: UnaryOp, depth: u32) -> PResult<'a, Node> {
    let after = if op == UnaryOp::Neg {
        "after `-`"
    } else {
        "after `!`"
    };
    let (i, (operand, height)) = commit(after, i, unary(i, depth + 1))?;
    let span = span_of(at).to(operand.span);
    Ok((i, node(ExprKind::Unary(op, operand), span, height + 1, at)?))
}

/// The span of the first token of `i`.
fn span_of(i: Tokens<'_>) -> Span {
    i.first().map_or(Span::default(), |t| t.span)
}

/// A number, `inf`, `draw(…)`, `( expr )`, a name, `name[index]` or `name(args…)`,
/// chosen by the first token (so no alternative is tried and abandoned).
fn primary(i: Tokens<'_>, depth: u32) -> PResult<'_, Node> {
    match i.first().map(|t| (t.kind, t.text)) {
        Some((TokenKind::Punct(Punct::LParen), _)) => parenthesised(i, depth),
        Some((TokenKind::Ident, "draw")) => draw(i, depth),
        Some((TokenKind::Ident, text)) if text != "inf" => name_form(i, depth),
        _ => {
            let number = token("an expression", |t| match t.kind {
                TokenKind::Number(v) => Some(Box::new(Expr {
                    kind: ExprKind::Number(v),
                    span: t.span,
                })),
                TokenKind::Ident if t.text == "inf" => Some(Box::new(Expr {
                    kind: ExprKind::Number(f64::INFINITY),
                    span: t.span,
                })),
                _ => None,
            });
            map(number, |e| (e, 1)).parse(i)
        }
    }
}

/// `( expr )`: no node of its own, but its span takes in the parentheses.
fn parenthesised(i: Tokens<'_>, depth: u32) -> PResult<'_, Node> {
    let (i, open) = punct(Punct::LParen, "`(`")(i)?;
    let (i, (mut inner, height)) = commit("after `(`", i, conditional(i, depth + 1))?;
    let (i, close) = commit("to close `(`", i, punct(Punct::RParen, "`)`")(i))?;
    inner.span = open.to(close);
    Ok((i, (inner, height)))
}

/// `draw(args…)` (E7): `draw` is never a name, so a bare `draw` is an error.
fn draw(i: Tokens<'_>, depth: u32) -> PResult<'_, Node> {
    let at = i;
    let (i, start) = keyword("draw")(i)?;
    let open = noted(
        "`draw` is always the draw form `draw(…)` (L1, E7)",
        punct(Punct::LParen, "`(`"),
    );
    let (i, _) = cut(context("after `draw`", open)).parse(i)?;
    let (i, (args, height, end)) = arguments(i, depth)?;
    Ok((
        i,
        node(ExprKind::Draw(args), start.to(end), height + 1, at)?,
    ))
}

/// A name, `name[index]` or a call `name(args…)`.
fn name_form(i: Tokens<'_>, depth: u32) -> PResult<'_, Node> {
    let (rest, id) = name("a name")(i)?;
    if let Ok((rest, _)) = punct(Punct::LBracket, "`[`")(rest) {
        return index(i, rest, id, depth);
    }
    if let Ok((rest, _)) = punct(Punct::LParen, "`(`")(rest) {
        return call(i, rest, id, depth);
    }
    let span = id.span;
    Ok((
        rest,
        (
            Box::new(Expr {
                kind: ExprKind::Name(id),
                span,
            }),
            1,
        ),
    ))
}

/// `id[index]`, with `id` at `at` and the index at `i`.
fn index<'a>(at: Tokens<'a>, i: Tokens<'a>, id: Ident, depth: u32) -> PResult<'a, Node> {
    let (i, (index, height)) = commit("after `[`", i, conditional(i, depth + 1))?;
    let (i, end) = commit("after the index", i, punct(Punct::RBracket, "`]`")(i))?;
    let span = id.span.to(end);
    Ok((i, node(ExprKind::Index(id, index), span, height + 1, at)?))
}

/// `id(args…)`, with `id` at `at` and the arguments at `i`.
fn call<'a>(at: Tokens<'a>, i: Tokens<'a>, id: Ident, depth: u32) -> PResult<'a, Node> {
    let (i, (args, height, end)) = arguments(i, depth)?;
    let span = id.span.to(end);
    Ok((i, node(ExprKind::Call(id, args), span, height + 1, at)?))
}

/// The arguments after a call's `(` up to its `)`: zero or more, comma-separated. Gives
/// them, their greatest height and the span of the `)`.
fn arguments(mut i: Tokens<'_>, depth: u32) -> PResult<'_, (Vec<Expr>, u32, Span)> {
    let mut args = Vec::new();
    let mut height = 0;
    if let Ok((rest, end)) = punct(Punct::RParen, "`)`")(i) {
        return Ok((rest, (args, height, end)));
    }
    loop {
        let (rest, (arg, arg_height)) =
            commit("in the argument list", i, conditional(i, depth + 1))?;
        args.push(*arg);
        height = height.max(arg_height);
        match after_argument(rest)? {
            (rest, Some(end)) => return Ok((rest, (args, height, end))),
            (rest, None) => i = rest,
        }
    }
}

/// The `,` or `)` after an argument, giving the span of a `)`.
fn after_argument(i: Tokens<'_>) -> PResult<'_, Option<Span>> {
    let close_or_comma = alt((
        map(punct(Punct::RParen, "`)`"), Some),
        map(punct(Punct::Comma, "`,`"), |_| None),
    ));
    commit(
        "after an argument",
        i,
        label("`,` or `)`", close_or_comma)(i),
    )
}
