//! The manifest a shared object carries (docs/ABI.md, "Manifest"): JSON text that
//! tells a loader everything it needs besides the functions themselves — format
//! version, values, session attributes, and per pool and stage its options, slot
//! layouts with input names, and per function its exported symbol, expression and
//! read-set. This file writes it from a checked `ir::Program`, reads it back with a
//! small JSON parser (poolc has no JSON dependency), and compares two manifests
//! naming the first difference. It never touches files, symbols or machine code.

use std::fmt::Write;

use crate::aot::object::{Prefix, Target};
use crate::ir::{
    self, Evict, Expr, Input, JoinRule, Layout, Limit, Member, PreemptMode, Program, QueryTarget,
    QueuePolicy, ReadSet, SiteExpr, Slot, StageKind,
};

/// The version of the manifest layout; a loader refuses any other. Bump it when a
/// field changes meaning or disappears (adding fields is also a bump: loaders
/// compare manifests whole).
pub const FORMAT: u32 = 1;

/// The manifest of `program` as built for `target` with `prefix`: JSON, one field
/// per line, deterministic (the same program always gives the same bytes).
pub fn write(program: &Program, target: &Target, prefix: &Prefix) -> String {
    let mut w = Writer {
        out: String::new(),
        program,
        prefix,
    };
    w.program(target);
    w.out
}

/// The same notation with slots named by `layout` (`row.prompt`, `ctx.free(kv)`),
/// for people (the header's comments).
pub fn expr_named(e: &Expr, program: &Program, layout: &Layout) -> String {
    ir::prefix(e, &|s, slot| {
        let (side, inputs, i) = match slot {
            Slot::Row(i) => ("row", &layout.row, i),
            Slot::Ctx(i) => ("ctx", &layout.ctx, i),
        };
        let name = inputs
            .get(i as usize)
            .map_or_else(|| format!("?{i}"), |x| ir::input_name(program, *x));
        let _ = write!(s, "{side}.{name}");
    })
}

/// The names of a read-set, in its order.
pub fn read_names(program: &Program, reads: &ReadSet) -> Vec<String> {
    reads.0.iter().map(|r| ir::read_name(program, *r)).collect()
}

/// A JSON string literal.
fn quote(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", u32::from(c));
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// A number: finite values as Rust's shortest exact form (valid JSON), the others
/// as the strings `"inf"`, `"-inf"`, `"NaN"` (JSON has no such numbers).
fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v:?}")
    } else {
        quote(&format!("{v:?}"))
    }
}

fn limit(l: Limit) -> String {
    match l {
        Limit::Finite(n) => n.to_string(),
        Limit::Unbounded => quote("inf"),
    }
}

fn rule(r: JoinRule) -> &'static str {
    match r {
        JoinRule::MemberForMember => "\"member_for_member\"",
        JoinRule::SharedTarget => "\"shared_target\"",
        JoinRule::SharedSource => "\"shared_source\"",
    }
}

fn list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

struct Writer<'a> {
    out: String,
    program: &'a Program,
    prefix: &'a Prefix,
}

impl Writer<'_> {
    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn program(&mut self, target: &Target) {
        let p = self.program;
        self.line(0, "{");
        self.line(1, &format!("\"format\": {FORMAT},"));
        let generator = format!("poolc {}", env!("CARGO_PKG_VERSION"));
        self.line(1, &format!("\"generator\": {},", quote(&generator)));
        self.line(1, &format!("\"target\": {},", quote(target.name())));
        self.line(1, &format!("\"prefix\": {},", quote(self.prefix.as_str())));
        self.line(1, "\"values\": [");
        for (i, v) in p.values.iter().enumerate() {
            let text = format!(
                "{{\"name\": {}, \"value\": {}, \"param\": {}}}{}",
                quote(&v.name),
                number(v.value),
                v.is_param,
                comma(i, p.values.len())
            );
            self.line(2, &text);
        }
        self.line(1, "],");
        self.line(1, "\"session\": [");
        for (i, a) in p.session.attrs.iter().enumerate() {
            let default = a.default.map_or("null".to_string(), number);
            let text = format!(
                "{{\"id\": {i}, \"name\": {}, \"builtin\": {}, \"default\": {default}}}{}",
                quote(&a.name),
                a.builtin,
                comma(i, p.session.attrs.len())
            );
            self.line(2, &text);
        }
        self.line(1, "],");
        self.line(1, "\"stages\": [");
        for (i, s) in p.stages.iter().enumerate() {
            self.line(2, "{");
            self.line(3, &format!("\"name\": {},", quote(&s.name)));
            self.line(3, &format!("\"count\": {},", s.count));
            let kind = match s.kind {
                StageKind::Step => "step",
                StageKind::Link => "link",
            };
            self.line(3, &format!("\"kind\": {},", quote(kind)));
            self.line(3, &format!("\"budget\": {},", limit(s.budget)));
            self.line(3, &format!("\"seats\": {},", limit(s.seats)));
            self.line(3, &format!("\"chunk\": {},", limit(s.chunk)));
            self.line(
                3,
                &format!("\"exclusive_prefill\": {},", s.exclusive_prefill),
            );
            self.line(3, &format!("\"rate\": {},", number(s.rate)));
            let time = self.function(&format!("stage_{}_time", s.name), &s.time);
            self.line(3, &format!("\"time\": {time},"));
            self.layout("time_layout", &s.time_layout, "");
            self.line(2, &format!("}}{}", comma(i, p.stages.len())));
        }
        self.line(1, "],");
        self.line(1, "\"pools\": [");
        for (i, pool) in p.pools.iter().enumerate() {
            self.pool(pool);
            self.line(2, &format!("}}{}", comma(i, p.pools.len())));
        }
        self.line(1, "]");
        self.line(0, "}");
    }

    /// Everything of a pool but its closing brace.
    fn pool(&mut self, pool: &crate::ir::CPool) {
        let p = self.program;
        let sym = format!("pool_{}", pool.name);
        self.line(2, "{");
        self.line(3, &format!("\"name\": {},", quote(&pool.name)));
        self.line(3, &format!("\"count\": {},", pool.count));
        self.line(3, &format!("\"cap\": {},", limit(pool.cap)));
        let block = pool.block.map_or("null".to_string(), |b| b.to_string());
        self.line(3, &format!("\"block\": {block},"));
        let preempt = match pool.preempt {
            PreemptMode::None => "none",
            PreemptMode::Lifo => "lifo",
        };
        self.line(3, &format!("\"preempt\": {},", quote(preempt)));
        let admit = pool.admit_via.map_or("null".to_string(), |j| {
            format!(
                "{{\"stage\": {}, \"rule\": {}}}",
                quote(&p.stage(j.target).name),
                rule(j.rule)
            )
        });
        self.line(3, &format!("\"admit_via\": {admit},"));
        let queue = match &pool.queue {
            QueuePolicy::Fifo => None,
            QueuePolicy::By(keys) => Some(keys.as_slice()),
        };
        self.key_list("queue", "fifo", &format!("{sym}_queue"), queue);
        let evict = match &pool.evict {
            Evict::Lru => None,
            Evict::By(keys) => Some(keys.as_slice()),
        };
        self.key_list("evict", "lru", &format!("{sym}_evict"), evict);
        match &pool.spill {
            None => self.line(3, "\"spill\": null,"),
            Some(s) => {
                self.line(3, "\"spill\": {");
                let tier = format!(
                    "\"tier\": {{\"pool\": {}, \"rule\": {}}},",
                    quote(&p.pool(s.tier.target).name),
                    rule(s.tier.rule)
                );
                self.line(4, &tier);
                let link = format!(
                    "\"link\": {{\"stage\": {}, \"rule\": {}}},",
                    quote(&p.stage(s.link.target).name),
                    rule(s.link.rule)
                );
                self.line(4, &link);
                let pred = self.function(&format!("{sym}_spill_pred"), &s.pred);
                self.line(4, &format!("\"pred\": {pred},"));
                let work = self.function(&format!("{sym}_spill_work"), &s.work);
                self.line(4, &format!("\"work\": {work}"));
                self.line(3, "},");
            }
        }
        self.layout("queue_layout", &pool.queue_layout, ",");
        self.layout("entry_layout", &pool.entry_layout, "");
    }

    /// `"queue": {"policy": …, "keys": […], "cmp": …, "select": …}`.
    fn key_list(&mut self, site: &str, default: &str, sym: &str, keys: Option<&[SiteExpr]>) {
        let Some(keys) = keys else {
            self.line(
                3,
                &format!(
                    "\"{site}\": {{\"policy\": {}, \"keys\": []}},",
                    quote(default)
                ),
            );
            return;
        };
        self.line(3, &format!("\"{site}\": {{"));
        self.line(4, "\"policy\": \"by\",");
        self.line(4, "\"keys\": [");
        for (i, k) in keys.iter().enumerate() {
            let f = self.function(&format!("{sym}_key{i}"), k);
            self.line(5, &format!("{f}{}", comma(i, keys.len())));
        }
        self.line(4, "],");
        let cmp = quote(&self.prefix.symbol(&format!("{sym}_cmp")));
        self.line(4, &format!("\"cmp\": {cmp},"));
        let select = quote(&self.prefix.symbol(&format!("{sym}_select")));
        self.line(4, &format!("\"select\": {select}"));
        self.line(3, "},");
    }

    /// One function: `{"symbol": …, "expr": …, "reads": […], "fixed": …}`.
    fn function(&self, symbol: &str, site: &SiteExpr) -> String {
        let reads: Vec<String> = read_names(self.program, &site.reads)
            .iter()
            .map(|r| quote(r))
            .collect();
        format!(
            "{{\"symbol\": {}, \"expr\": {}, \"reads\": {}, \"fixed\": {}}}",
            quote(&self.prefix.symbol(symbol)),
            quote(&ir::prefix_slots(&site.expr)),
            list(&reads),
            site.reads.is_fixed()
        )
    }

    /// `"<field>": {"row": [slot…], "ctx": [slot…]}` and then `end`.
    fn layout(&mut self, field: &str, layout: &Layout, end: &str) {
        self.line(3, &format!("\"{field}\": {{"));
        let row: Vec<String> = layout.row.iter().map(|i| self.slot(*i)).collect();
        let ctx: Vec<String> = layout.ctx.iter().map(|i| self.slot(*i)).collect();
        self.line(4, &format!("\"row\": {},", list(&row)));
        self.line(4, &format!("\"ctx\": {}", list(&ctx)));
        self.line(3, &format!("}}{end}"));
    }

    /// One slot: its source name and what kind of input fills it.
    fn slot(&self, input: Input) -> String {
        let p = self.program;
        let name = quote(&ir::input_name(p, input));
        match input {
            Input::Attr(a) => format!(
                "{{\"name\": {name}, \"kind\": \"attr\", \"attr\": {}}}",
                a.0
            ),
            Input::Var(_) => format!("{{\"name\": {name}, \"kind\": \"var\"}}"),
            Input::Enqueued => format!("{{\"name\": {name}, \"kind\": \"enqueued\"}}"),
            Input::Query(q) => {
                let (what, target, member) = match q.target {
                    QueryTarget::Pool(id, m) => ("pool", &p.pool(id).name, m),
                    QueryTarget::Stage(id, m) => ("stage", &p.stage(id).name, m),
                };
                let member = match member {
                    Member::Same => quote("same"),
                    Member::Index(i) => i.to_string(),
                };
                format!(
                    "{{\"name\": {name}, \"kind\": \"query\", \"query\": {}, \"{what}\": {}, \"member\": {member}}}",
                    quote(q.kind.name()),
                    quote(target)
                )
            }
        }
    }
}

fn comma(i: usize, len: usize) -> &'static str {
    if i + 1 < len { "," } else { "" }
}

// ---- reading ----

/// A parsed JSON value. Objects keep their field order; numbers keep their text,
/// so that comparing two manifests compares exactly what was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// A field of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn short(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Number(n) => n.clone(),
            Json::String(s) => quote(s),
            Json::Array(a) => format!("an array of {}", a.len()),
            Json::Object(_) => "an object".into(),
        }
    }
}

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

/// Parses JSON text (RFC 8259; one value, surrounding whitespace allowed).
pub fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.at != p.s.len() {
        return Err(p.error("text after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {}", self.at)
    }

    fn ws(&mut self) {
        while self
            .s
            .get(self.at)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.ws();
        match self.s.get(self.at) {
            None => Err(self.error("unexpected end")),
            Some(b'{') => {
                self.at += 1;
                let mut fields = Vec::new();
                if self.eat(b'}') {
                    return Ok(Json::Object(fields));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return Err(self.error("expected `:`"));
                    }
                    fields.push((key, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Ok(Json::Object(fields));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected `,` or `}`"));
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Ok(Json::Array(items));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected `,` or `]`"));
                    }
                }
            }
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(_) => self.word(),
        }
    }

    /// `true`, `false`, `null` or a number.
    fn word(&mut self) -> Result<Json, String> {
        let start = self.at;
        while self
            .s
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'))
        {
            self.at += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
        match word {
            "true" => Ok(Json::Bool(true)),
            "false" => Ok(Json::Bool(false)),
            "null" => Ok(Json::Null),
            w if is_json_number(w) => Ok(Json::Number(w.to_string())),
            _ => {
                self.at = start;
                Err(self.error("expected a value"))
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.s.get(self.at) != Some(&b'"') {
            return Err(self.error("expected a string"));
        }
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.at) else {
                return Err(self.error("unterminated string"));
            };
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.at) else {
                        return Err(self.error("unterminated escape"));
                    };
                    self.at += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(self.error("bad escape")),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return Err(self.error("control character in a string")),
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.error("string is not UTF-8"))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .s
            .get(self.at..self.at + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.error("bad \\u escape"))?;
        self.at += 4;
        Ok(digits)
    }

    fn unicode_escape(&mut self) -> Result<char, String> {
        let hi = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            if self.s.get(self.at..self.at + 2) != Some(b"\\u") {
                return Err(self.error("lone surrogate"));
            }
            self.at += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(self.error("lone surrogate"));
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        char::from_u32(code).ok_or_else(|| self.error("bad \\u escape"))
    }
}

/// JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(w: &str) -> bool {
    let b = w.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    if b.get(i) == Some(&b'0') {
        i += 1;
    } else if !digits(&mut i) {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == b.len()
}

/// The first difference between two manifests, skipping the top-level fields in
/// `skip`, as `(path, found in a, found in b)`; `None` when they agree. Paths name
/// array elements by their `name` field when they have one (`pools[kv].cap`).
pub fn first_difference(a: &Json, b: &Json, skip: &[&str]) -> Option<(String, String, String)> {
    diff(a, b, String::new(), skip)
}

fn diff(a: &Json, b: &Json, path: String, skip: &[&str]) -> Option<(String, String, String)> {
    let at = |p: &str| {
        if p.is_empty() {
            "the top level".to_string()
        } else {
            p.to_string()
        }
    };
    match (a, b) {
        (Json::Object(fa), Json::Object(fb)) => {
            let keys = |f: &[(String, Json)]| -> Vec<String> {
                f.iter()
                    .filter(|(k, _)| !(path.is_empty() && skip.contains(&k.as_str())))
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            let (ka, kb) = (keys(fa), keys(fb));
            if ka != kb {
                return Some((
                    format!("the fields of {}", at(&path)),
                    ka.join(", "),
                    kb.join(", "),
                ));
            }
            for k in ka {
                let (Some(va), Some(vb)) = (a.get(&k), b.get(&k)) else {
                    continue;
                };
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if let Some(d) = diff(va, vb, sub, &[]) {
                    return Some(d);
                }
            }
            None
        }
        (Json::Array(ia), Json::Array(ib)) => {
            if ia.len() != ib.len() {
                let names = |items: &[Json]| -> String {
                    let names: Vec<String> = items.iter().map(element_name).collect();
                    format!("{} ({})", items.len(), names.join(", "))
                };
                return Some((format!("the length of {}", at(&path)), names(ia), names(ib)));
            }
            for (i, (va, vb)) in ia.iter().zip(ib).enumerate() {
                let label = match (va.get("name"), vb.get("name")) {
                    (Some(Json::String(x)), Some(Json::String(y))) if x == y => x.clone(),
                    _ => i.to_string(),
                };
                if let Some(d) = diff(va, vb, format!("{path}[{label}]"), &[]) {
                    return Some(d);
                }
            }
            None
        }
        _ if a == b => None,
        _ => Some((at(&path), a.short(), b.short())),
    }
}

fn element_name(v: &Json) -> String {
    match v.get("name") {
        Some(Json::String(s)) => s.clone(),
        _ => v.short(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_json_allows_and_refuses_the_rest() {
        let v = parse(r#" {"a": [1, -2.5e3, true, null, "x\"\u00e9\ud83d\ude00"], "b": {}} "#)
            .expect("valid JSON");
        assert_eq!(
            v.get("a"),
            Some(&Json::Array(vec![
                Json::Number("1".into()),
                Json::Number("-2.5e3".into()),
                Json::Bool(true),
                Json::Null,
                Json::String("x\"é😀".into()),
            ]))
        );
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            "{\"a\" 1}",
            "\"\\ud800\"",
            "[1] 2",
            "nul",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = "[".repeat(1000) + &"]".repeat(1000);
        assert!(
            parse(&deep).is_err(),
            "deep nesting is refused, not a crash"
        );
    }

    #[test]
    fn numbers_are_exact_and_valid_json() {
        for v in [0.005, 2e-5, 1e300, 5e-324, -0.0, 4096.0, 9007199254740993.0] {
            let text = number(v);
            assert!(is_json_number(&text), "{text}");
            assert_eq!(text.parse::<f64>().map(f64::to_bits), Ok(v.to_bits()));
        }
        assert_eq!(number(f64::INFINITY), "\"inf\"");
        assert_eq!(number(f64::NAN), "\"NaN\"");
    }

    #[test]
    fn differences_are_named_by_path() {
        let a = parse(r#"{"target": "x", "pools": [{"name": "kv", "cap": 1}]}"#).expect("ok");
        let b = parse(r#"{"target": "y", "pools": [{"name": "kv", "cap": 2}]}"#).expect("ok");
        assert_eq!(
            first_difference(&a, &b, &["target"]),
            Some(("pools[kv].cap".into(), "1".into(), "2".into()))
        );
        assert_eq!(first_difference(&a, &a, &[]), None);
    }
}
