//! The front end's first phase: source text to an AST with byte spans. It reports
//! lexical and parse errors as data (`SyntaxError`) and never panics on any input; it
//! knows nothing of names, values or sites.

pub mod ast;
mod error;
mod lexer;
mod parser;
pub mod printer;

pub use ast::Span;
pub use error::SyntaxError;
pub use parser::{parse, parse_expression};
