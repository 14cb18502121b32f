//! The manifest a shared object carries (docs/ABI.md, "Manifest"): JSON text that
//! tells a loader everything it needs besides the functions themselves — format
//! version, values, session attributes, and per pool and stage its options, slot
//! layouts with input names, and per function its exported symbol, expression and
//! read-set. This file writes it from a checked `ir::Program`, reads it back with
//! serde_json into [`Json`] (a tree that keeps fields in written order, so a
//! difference is named in document order and numbers in the text written), and
//! compares two manifests naming the first difference. It never touches files,
//! symbols or machine code.
//!
//! The writer lays out lines itself (one field per line, small records on one line)
//! and uses serde_json for string literals; the layout is the format's and does not
//! change without a format bump, so it is not serde_json's pretty printer. Numbers
//! are Rust's `{:?}` (exact and shortest), which serde_json's float printer is not
//! for every value. Expressions and names come from `ir::print`.

use std::fmt::{self, Write};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::aot::object::{Prefix, Target};
use crate::ir::{
    self, Evict, Expr, Input, JoinRule, Layout, Limit, LinkStage, Member, PreemptMode, Program,
    QueryTarget, QueuePolicy, QueueTie, ReadSet, Requeue, SiteExpr, Slot, StageKind, StepStage,
};

/// The version of the manifest layout; a loader refuses any other. Bump it when a
/// field changes meaning or disappears (adding fields is also a bump: loaders
/// compare manifests whole).
pub const FORMAT: u32 = 8;

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

/// A JSON string literal, as serde_json writes one.
fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
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
            self.line(3, &format!("\"kind\": {},", quote(s.kind.name())));
            // Every stage carries every field (format 2): a link writes the options of
            // a step that sets none, a step a link's default `rate`, and each the
            // `time` it exports.
            let unset_step = StepStage::default();
            let (step, link) = match &s.kind {
                StageKind::Step(step) => (step, LinkStage::default()),
                StageKind::Link(link) => (&unset_step, *link),
            };
            self.line(3, &format!("\"budget\": {},", limit(step.budget)));
            self.line(3, &format!("\"seats\": {},", limit(step.seats)));
            self.line(3, &format!("\"chunk\": {},", limit(step.chunk)));
            self.line(
                3,
                &format!("\"exclusive_prefill\": {},", step.exclusive_prefill),
            );
            self.line(3, &format!("\"rate\": {},", number(link.rate)));
            let (time, time_layout) = s.time();
            let time = self.function(&format!("stage_{}_time", s.name), time);
            self.line(3, &format!("\"time\": {time},"));
            self.layout("time_layout", time_layout, "");
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
    fn pool(&mut self, pool: &crate::ir::Pool) {
        let p = self.program;
        let sym = format!("pool_{}", pool.name);
        self.line(2, "{");
        self.line(3, &format!("\"name\": {},", quote(&pool.name)));
        self.line(3, &format!("\"count\": {},", pool.count));
        self.line(3, &format!("\"cap\": {},", limit(pool.cap)));
        let block = pool.block.map_or("null".to_string(), |b| b.to_string());
        self.line(3, &format!("\"block\": {block},"));
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
        // R21: present only when the keys end in `id` (docs/ABI.md); its absence
        // means enqueue order.
        if pool.queue_tie == QueueTie::Id {
            self.line(3, "\"queue_tie\": \"id\",");
        }
        let evict = match &pool.evict {
            Evict::Lru => None,
            Evict::By(keys) => Some(keys.as_slice()),
        };
        self.key_list("evict", "lru", &format!("{sym}_evict"), evict);
        let (preempt, keys) = match &pool.preempt {
            PreemptMode::None => ("none", None),
            PreemptMode::Lifo => ("lifo", None),
            PreemptMode::By(keys) => ("by", Some(keys.as_slice())),
        };
        self.key_list("preempt", preempt, &format!("{sym}_preempt"), keys);
        let requeue = match pool.requeue {
            Requeue::Head => "head",
            Requeue::Keyed => "keyed",
        };
        self.line(3, &format!("\"requeue\": {},", quote(requeue)));
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
        // R30: the service counters a host keeps for `service` (null without `fair`).
        let fair = pool.fair.map_or("null".to_string(), |f| {
            let weight = f.weight.map_or("null".to_string(), |w| w.0.to_string());
            format!(
                "{{\"by\": {}, \"prefill\": {:?}, \"decode\": {:?}, \"weight\": {weight}}}",
                f.by.0, f.prefill, f.decode
            )
        });
        self.line(3, &format!("\"fair\": {fair},"));
        self.layout("queue_layout", &pool.queue_layout, ",");
        self.layout("entry_layout", &pool.entry_layout, ",");
        let tail = pool.route.is_some() || pool.handoff.is_some();
        self.layout(
            "resident_layout",
            &pool.resident_layout,
            if tail { "," } else { "" },
        );
        // R22–R24: present only on a routed family (docs/ABI.md).
        if let Some(route) = &pool.route {
            self.key_list("route", "by", &format!("{sym}_route"), Some(&route.keys));
            let every = route.every.map_or("null".to_string(), |t| format!("{t:?}"));
            self.line(3, &format!("\"route_every\": {every},"));
            self.line(3, &format!("\"route_remember\": {},", route.remember));
            let end = if pool.handoff.is_some() { "," } else { "" };
            self.layout("route_layout", &route.layout, end);
        }
        // R25–R27: present only on a family that hands off (docs/ABI.md).
        if let Some(h) = &pool.handoff {
            self.line(3, "\"handoff\": {");
            self.line(4, &format!("\"pool\": {},", quote(&p.pool(h.target).name)));
            let link = format!(
                "\"link\": {{\"stage\": {}, \"rule\": {}}},",
                quote(&p.stage(h.link.target).name),
                rule(h.link.rule)
            );
            self.line(4, &link);
            let work = self.function(&format!("{sym}_handoff_work"), &h.work);
            self.line(4, &format!("\"work\": {work}"));
            self.line(3, "},");
            self.layout("handoff_layout", &h.layout, "");
        }
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
            Input::Scored(v) => format!(
                "{{\"name\": {name}, \"kind\": \"scored\", \"scored\": {}}}",
                quote(v.name())
            ),
            Input::Over(e, probe) => {
                let of = match probe {
                    ir::Probe::Query(q) => ir::input_name(p, Input::Query(q)),
                    ir::Probe::Scored(v) => ir::input_name(p, Input::Scored(v)),
                };
                format!(
                    "{{\"name\": {name}, \"kind\": \"over\", \"extreme\": {}, \"of\": {}}}",
                    quote(e.name()),
                    quote(&of)
                )
            }
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

/// Parses JSON text (RFC 8259; one value, surrounding whitespace allowed) with
/// serde_json, which also bounds nesting (it refuses deep input instead of
/// overflowing the stack). Numbers are kept as the text Rust prints for the value
/// read, which is the text the writer wrote.
pub fn parse(text: &str) -> Result<Json, serde_json::Error> {
    serde_json::from_str(text)
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

/// Builds a [`Json`] from serde_json's events, keeping object fields in order.
struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.to_string()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.to_string()))
    }

    // The writer writes `{:?}`, the shortest text that reads back to the same f64,
    // so printing the value read gives that text again.
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Number(format!("{v:?}")))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields = Vec::new();
        while let Some(field) = map.next_entry::<String, Json>()? {
            fields.push(field);
        }
        Ok(Json::Object(fields))
    }
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
    fn parses_what_json_allows_in_order_and_refuses_the_rest() {
        let v = parse(r#" {"b": [1, -2.5e3, true, null, "x\"\u00e9\ud83d\ude00"], "a": {}} "#)
            .expect("valid JSON");
        let Json::Object(fields) = &v else {
            panic!("an object: {v:?}")
        };
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a"], "fields keep their order");
        assert_eq!(
            v.get("b"),
            Some(&Json::Array(vec![
                Json::Number("1".into()),
                Json::Number("-2500.0".into()),
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
            assert_eq!(
                parse(&text).ok(),
                Some(Json::Number(text.clone())),
                "{text}"
            );
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
