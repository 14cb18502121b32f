//! The C header of a built policy (`poolc build --header`): a declaration of every
//! exported function and of the manifest accessor, slot counts as enum constants,
//! and comments giving each row and ctx layout (slot index → input name) and each
//! function's expression and reads. It only renders text from the checked program;
//! it writes no file and must stay valid C99 and C++ for any spec.

use std::fmt::Write;

use super::manifest::{self, FORMAT};
use crate::aot::object::{Prefix, Target};
use crate::ir::{Evict, Layout, PreemptMode, Program, QueuePolicy, SiteExpr};

/// The header text for `program` built for `target` with `prefix`; `source` names
/// the spec in the opening comment.
pub fn render(program: &Program, target: &Target, prefix: &Prefix, source: &str) -> String {
    let mut h = String::new();
    let version = env!("CARGO_PKG_VERSION");
    let guard = format!("POOLC_POLICY_H_{}", prefix.as_str().to_ascii_uppercase());
    let _ = write!(
        h,
        "/* The policy functions of {}
 * compiled by `poolc build` {version} for {target}. Generated: do not edit.
 *
 * Every value is a double. A row holds one record's slots (a waiting hold at the
 * queue site, a cache entry at the entry sites), the ctx the slots shared by every
 * record at one moment; both are arrays of doubles laid out as listed below
 * (slot index: input name). A function reads only its site's slots; a pointer to
 * zero slots is never read. Functions are reentrant and thread-safe.
 *   key, pred, work: the value (spill when pred is non-zero; NaN is non-zero).
 *   cmp:    -1, 0 or 1 by the key list (each key ascending, -0 == +0, NaN
 *           greatest and equal to NaN); ties are the caller's.
 *   select: index of the least of n rows, the lowest among equals, -1 when n is 0;
 *           row i starts at rows + i * stride (stride counts doubles, not bytes).
 *   time:   seconds per iteration of a step stage, from the ctx (the iteration's
 *           totals) and n take rows laid out as select's (one per session taking
 *           tokens, in take order), which sum() adds over.
 * The full contract is docs/ABI.md of poolc.
 */
#ifndef {guard}
#define {guard}

#include <stdint.h>

#ifdef __cplusplus
extern \"C\" {{
#endif

/* The manifest: JSON text, format {FORMAT} (docs/ABI.md), NUL-terminated. Returns it
 * and, unless len is NULL, stores its length without the NUL in *len. */
const char *{manifest_fn}(uint64_t *len);
extern const char {manifest_data}[];
enum {{ {prefix}_manifest_format = {FORMAT} }};
",
        comment(source),
        manifest_fn = prefix.manifest_fn(),
        manifest_data = prefix.manifest_data(),
    );
    for stage in &program.stages {
        let sym = format!("stage_{}_time", stage.name);
        let _ = write!(
            h,
            "\n/* ---- stage {}{} ---- */\n",
            stage.name,
            count(stage.count)
        );
        let (time, time_layout) = stage.time();
        layout(&mut h, program, prefix, &sym, "time", time_layout);
        function(&mut h, program, "time", time, time_layout);
        let _ = writeln!(
            h,
            "double {}(const double *rows, uint64_t n, uint64_t stride, const double *ctx);",
            prefix.symbol(&sym)
        );
    }
    for pool in &program.pools {
        let sym = format!("pool_{}", pool.name);
        let _ = write!(
            h,
            "\n/* ---- pool {}{}: cap {}, block {} ---- */\n",
            pool.name,
            count(pool.count),
            pool.cap,
            pool.block_units()
        );
        let queue = match &pool.queue {
            QueuePolicy::Fifo => {
                let _ = writeln!(h, "/* queue fifo: no functions */");
                None
            }
            QueuePolicy::By(keys) => Some(keys),
        };
        if let Some(keys) = queue {
            let site = format!("{sym}_queue");
            layout(&mut h, program, prefix, &site, "queue", &pool.queue_layout);
            key_list(&mut h, program, prefix, &site, keys, &pool.queue_layout);
        }
        let evict = match &pool.evict {
            Evict::Lru => {
                let _ = writeln!(h, "/* evict lru: no functions */");
                None
            }
            Evict::By(keys) => Some(keys),
        };
        if evict.is_some() || pool.spill.is_some() {
            let site = format!("{sym}_entry");
            layout(&mut h, program, prefix, &site, "entry", &pool.entry_layout);
        }
        if let Some(keys) = evict {
            let site = format!("{sym}_evict");
            key_list(&mut h, program, prefix, &site, keys, &pool.entry_layout);
        }
        if let PreemptMode::By(keys) = &pool.preempt {
            let site = format!("{sym}_preempt");
            let l = &pool.resident_layout;
            layout(
                &mut h,
                program,
                prefix,
                &format!("{sym}_resident"),
                "resident",
                l,
            );
            key_list(&mut h, program, prefix, &site, keys, l);
        }
        if let Some(route) = &pool.route {
            let l = &route.layout;
            layout(
                &mut h,
                program,
                prefix,
                &format!("{sym}_route"),
                "route (a row per member)",
                l,
            );
            key_list(
                &mut h,
                program,
                prefix,
                &format!("{sym}_route"),
                &route.keys,
                l,
            );
        }
        if let Some(spill) = &pool.spill {
            for (what, site) in [("pred", &spill.pred), ("work", &spill.work)] {
                let l = &pool.entry_layout;
                function(&mut h, program, &format!("spill {what}"), site, l);
                let _ = writeln!(
                    h,
                    "double {}(const double *row, const double *ctx);",
                    prefix.symbol(&format!("{sym}_spill_{what}"))
                );
            }
        }
        if let Some(handoff) = &pool.handoff {
            let l = &handoff.layout;
            layout(
                &mut h,
                program,
                prefix,
                &format!("{sym}_handoff"),
                "handoff (one row: the session)",
                l,
            );
            function(&mut h, program, "handoff work", &handoff.work, l);
            let _ = writeln!(
                h,
                "double {}(const double *row, const double *ctx);",
                prefix.symbol(&format!("{sym}_handoff_work"))
            );
        }
    }
    let _ = write!(
        h,
        "
#ifdef __cplusplus
}}
#endif

#endif /* {guard} */
"
    );
    h
}

fn count(n: u32) -> String {
    if n == 1 {
        String::new()
    } else {
        format!("[{n}]")
    }
}

fn slots(n: usize) -> String {
    if n == 1 {
        "1 slot".to_string()
    } else {
        format!("{n} slots")
    }
}

/// Text safe inside a C comment.
fn comment(text: &str) -> String {
    text.replace("*/", "* /")
}

/// The layout comment and the slot-count constants of one site.
fn layout(
    h: &mut String,
    program: &Program,
    prefix: &Prefix,
    site_sym: &str,
    site: &str,
    layout: &Layout,
) {
    let names = |inputs: &[crate::ir::Input]| -> String {
        if inputs.is_empty() {
            return "(none)".to_string();
        }
        inputs
            .iter()
            .enumerate()
            .map(|(i, x)| format!("[{i}] {}", crate::ir::input_name(program, *x)))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let _ = writeln!(
        h,
        "/* {site} row, {}: {} */",
        slots(layout.row.len()),
        comment(&names(&layout.row))
    );
    let _ = writeln!(
        h,
        "/* {site} ctx, {}: {} */",
        slots(layout.ctx.len()),
        comment(&names(&layout.ctx))
    );
    let base = prefix.symbol(site_sym);
    let _ = writeln!(h, "enum {{ {base}_row_slots = {} }};", layout.row.len());
    let _ = writeln!(h, "enum {{ {base}_ctx_slots = {} }};", layout.ctx.len());
}

/// A comment with a function's expression (the manifest's prefix notation, slots
/// by name) and what it reads.
fn function(h: &mut String, program: &Program, what: &str, site: &SiteExpr, layout: &Layout) {
    let reads = manifest::read_names(program, &site.reads).join(", ");
    let _ = writeln!(
        h,
        "/* {what}: {}; reads {{{}}} */",
        comment(&manifest::expr_named(&site.expr, program, layout)),
        comment(&reads)
    );
}

fn key_list(
    h: &mut String,
    program: &Program,
    prefix: &Prefix,
    sym: &str,
    keys: &[SiteExpr],
    layout: &Layout,
) {
    for (i, k) in keys.iter().enumerate() {
        function(h, program, &format!("key {i}"), k, layout);
        let _ = writeln!(
            h,
            "double {}(const double *row, const double *ctx);",
            prefix.symbol(&format!("{sym}_key{i}"))
        );
    }
    let _ = writeln!(
        h,
        "int32_t {}(const double *row_a, const double *row_b, const double *ctx);",
        prefix.symbol(&format!("{sym}_cmp"))
    );
    let _ = writeln!(
        h,
        "int64_t {}(const double *rows, uint64_t n, uint64_t stride, const double *ctx);",
        prefix.symbol(&format!("{sym}_select"))
    );
}
