//! Docs true to the code: what docs/ and README.md name is there. The Rule → file
//! table of docs/ARCHITECTURE.md is read cell by cell, by the conventions stated above
//! it: each test it names exists in the file it names, each pattern's count is the
//! number of that file's tests it matches, each file it names exists, and each section
//! holds one table (`the_rule_table_counts_are_the_tests`). Every rule that
//! docs/LANGUAGE.md numbers has exactly one row (`every_rule_has_a_row`). Every
//! repository path a page names, and every page-relative link, exists in the checkout
//! (`every_path_a_doc_names_exists`; what counts as a path is pinned by
//! `the_path_and_link_readers_take_repository_paths_and_nothing_else`). It reads text
//! only: it runs nothing and never edits a doc.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A file of the checkout, by its path from the repository root.
fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters (a
/// run without `/` unless `cross_slash`).
fn wildcard(pattern: &str, text: &str, cross_slash: bool) -> bool {
    let Some((head, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(tail) = text.strip_prefix(head) else {
        return false;
    };
    for k in 0..=tail.len() {
        if !tail.is_char_boundary(k) {
            continue;
        }
        if !cross_slash && tail[..k].contains('/') {
            break;
        }
        if wildcard(rest, &tail[k..], cross_slash) {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------------
// The Rule → file table.
// ---------------------------------------------------------------------------------

/// One row of the table: the rule id (the first word of its first cell), its section
/// heading, its line in ARCHITECTURE.md, and its second and third cells.
struct Row {
    rule: String,
    section: String,
    line: usize,
    implemented: String,
    pinned: String,
}

/// Splits `text` at each top-level `sep`: one inside backticks or parentheses does
/// not count.
fn split_top(text: &str, seps: &[char]) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut in_code = false;
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '`' => in_code = !in_code,
            '(' if !in_code => depth += 1,
            ')' if !in_code => depth = depth.saturating_sub(1),
            _ => {}
        }
        if seps.contains(&c) && !in_code && depth == 0 {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts
}

/// The rows of the "Rule → file table" section, after checking its shape: each `###`
/// section holds one table (its lines contiguous: a blank line would end the table
/// and show the rows after it as text), made of a header, a `|---|` line and rows of
/// three cells.
fn rule_table() -> Vec<Row> {
    let doc = read("docs/ARCHITECTURE.md");
    let lines: Vec<&str> = doc.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == "## Rule → file table")
        .expect("docs/ARCHITECTURE.md has a `## Rule → file table` section");
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("## "))
        .map_or(lines.len(), |n| start + 1 + n);
    let mut rows = Vec::new();
    let mut section = String::new();
    // Where the current section's table started and ended, in lines.
    let mut table: Option<(usize, usize)> = None;
    for (i, line) in lines.iter().enumerate().take(end).skip(start + 1) {
        if let Some(heading) = line.strip_prefix("### ") {
            section = heading.to_string();
            table = None;
            continue;
        }
        if !line.starts_with('|') {
            continue;
        }
        assert!(
            !section.is_empty(),
            "docs/ARCHITECTURE.md:{}: a table line before the first `###` section",
            i + 1
        );
        let (first, last) = *table.get_or_insert((i, i));
        assert!(
            last + 1 >= i,
            "docs/ARCHITECTURE.md:{}: section `{section}` holds a second table (a blank or \
             text line at {} splits the table that starts at line {})",
            i + 1,
            last + 2,
            first + 1
        );
        table = Some((first, i));
        let cells = split_top(line.trim().trim_matches('|'), &['|']);
        assert_eq!(
            cells.len(),
            3,
            "docs/ARCHITECTURE.md:{}: a row of the rule table has three cells",
            i + 1
        );
        if i == first {
            assert_eq!(
                cells[0].trim(),
                "rule",
                "docs/ARCHITECTURE.md:{}: the header",
                i + 1
            );
            continue;
        }
        if i == first + 1 {
            assert!(
                cells.iter().all(|c| c.trim() == "---"),
                "docs/ARCHITECTURE.md:{}: the header's `|---|` line",
                i + 1
            );
            continue;
        }
        rows.push(Row {
            rule: cells[0]
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string(),
            section: section.clone(),
            line: i + 1,
            implemented: cells[1].trim().to_string(),
            pinned: cells[2].trim().to_string(),
        });
    }
    assert!(
        rows.len() > 20,
        "the rule table has only {} rows",
        rows.len()
    );
    rows
}

/// The test functions of a Rust file: each `fn` that a `#[test]` (with any attributes
/// between, such as an `ignore` for a missing tool) stands above, in `proptest!`
/// blocks too.
fn test_functions(rel: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut pending = false;
    for line in read(rel).lines() {
        let line = line.trim_start();
        if line.starts_with("#[test]") {
            pending = true;
        } else if pending && let Some(at) = line.find("fn ") {
            let name: String = line[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
            pending = false;
        }
    }
    names
}

/// The ui cases: the names listed in cli/tests/ui.rs's `ui_cases!`, one test each,
/// each a tests/ui/<name>.pool with its .snap (cli/tests/ui.rs checks that the list
/// is the folder).
fn ui_cases() -> Vec<String> {
    let text = read("cli/tests/ui.rs");
    let from = text
        .find("\nui_cases! {")
        .expect("cli/tests/ui.rs invokes `ui_cases!`");
    let list = &text[from + "\nui_cases! {".len()..];
    let list = &list[..list.find('}').expect("the `ui_cases!` list ends")];
    let cases: Vec<String> = list
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(cases.len() > 20, "read only {} ui cases", cases.len());
    cases
}

/// Whether `rel`, a path from the repository root, is a file of the checkout.
fn is_file(rel: &str) -> bool {
    !rel.is_empty() && root().join(rel).is_file()
}

/// The tests a "pinned by" item names: `(name, Some(count))` for a pattern with `*`
/// and its `(N)`, `(name, None)` for an exact name. After the file come test names in
/// backticks, separated by commas; a parenthesised note that is not a bare count is
/// prose, skipped with any backticks in it.
fn named_tests(rest: &str, at: &str) -> Result<Vec<(String, Option<usize>)>, String> {
    let mut named: Vec<(String, Option<usize>)> = Vec::new();
    let mut s = rest.trim_start();
    while !s.is_empty() {
        if let Some(after) = s.strip_prefix('`') {
            let close = after
                .find('`')
                .ok_or_else(|| format!("{at}: an unclosed `"))?;
            named.push((after[..close].to_string(), None));
            s = &after[close + 1..];
        } else if s.starts_with('(') {
            let mut depth = 0usize;
            let mut in_code = false;
            let mut close = None;
            for (k, c) in s.char_indices() {
                match c {
                    '`' => in_code = !in_code,
                    '(' if !in_code => depth += 1,
                    ')' if !in_code => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(k);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let close = close.ok_or_else(|| format!("{at}: an unclosed ("))?;
            let inner = &s[1..close];
            if let Ok(n) = inner.trim().parse::<usize>() {
                match named.last_mut() {
                    Some((name, count @ None)) if name.contains('*') => *count = Some(n),
                    _ => return Err(format!("{at}: a count ({n}) follows no pattern")),
                }
            }
            s = &s[close + 1..];
        } else if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else {
            return Err(format!(
                "{at}: after the file, expected `test names`, `pattern_*` (N), or a (note); \
                 found `{s}`"
            ));
        }
        s = s.trim_start();
    }
    for (name, count) in &named {
        if name.contains('*') && count.is_none() {
            return Err(format!("{at}: the pattern `{name}` has no (count)"));
        }
    }
    Ok(named)
}

/// The table's "pinned by" cells against the tests. A cell is items separated by `;`,
/// each a Rust file by its path from the repository root, or `ui` (the `ui_cases!`
/// list), then the tests it names: an exact name must be a test of that file, and a
/// pattern such as `r10_*` (8) or `s1_*_draws` (6) must match exactly that many of
/// its tests. A file with no names pins the rule as a whole. The "implemented in"
/// cells are items separated by `;` or `,`, each a file's path from the root and an
/// optional note in parentheses: each file must exist.
#[test]
fn the_rule_table_counts_are_the_tests() {
    let ui = ui_cases();
    let mut wrong = Vec::new();
    for row in rule_table() {
        let at = format!("docs/ARCHITECTURE.md:{} ({})", row.line, row.rule);
        for item in split_top(&row.implemented, &[';', ',']) {
            let file = item.split_whitespace().next().unwrap_or_default();
            if !is_file(file) {
                wrong.push(format!(
                    "{at}: implemented in `{}`: `{file}` is not a file's path from the root",
                    item.trim()
                ));
            }
        }
        for item in split_top(&row.pinned, &[';']) {
            let item = item.trim();
            let (file, rest) = item.split_once(char::is_whitespace).unwrap_or((item, ""));
            let tests = if file == "ui" {
                ui.clone()
            } else if is_file(file) && file.ends_with(".rs") {
                test_functions(file)
            } else {
                wrong.push(format!(
                    "{at}: pinned by `{item}`: `{file}` is neither `ui` nor a Rust file's path \
                     from the root"
                ));
                continue;
            };
            let named = match named_tests(rest, &at) {
                Ok(named) => named,
                Err(e) => {
                    wrong.push(e);
                    continue;
                }
            };
            for (name, count) in named {
                let found = tests.iter().filter(|t| wildcard(&name, t, true)).count();
                match count {
                    Some(n) if n != found => wrong.push(format!(
                        "{at}: {file} `{name}` ({n}), but {found} tests match"
                    )),
                    None if found == 0 => {
                        wrong.push(format!("{at}: {file} has no test `{name}`"));
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the rule table does not match the tests: {wrong:#?}"
    );
}

/// The rules docs/LANGUAGE.md numbers, from its "**Rule numbers**" note: ranges such
/// as `R1–R20`, expanded.
fn language_rules() -> BTreeSet<String> {
    let doc = read("docs/LANGUAGE.md");
    let note = doc
        .lines()
        .find(|l| l.contains("**Rule numbers**"))
        .expect("docs/LANGUAGE.md has its **Rule numbers** note");
    let ranges = note
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .expect("the note lists its ranges in parentheses")
        .0;
    let mut rules = BTreeSet::new();
    for range in ranges.split(',') {
        let (from, to) = range
            .trim()
            .split_once('–')
            .unwrap_or_else(|| panic!("`{range}` is not a range such as R1–R20"));
        let (letter, first) = from.split_at(1);
        let last = to
            .strip_prefix(letter)
            .unwrap_or_else(|| panic!("`{range}` changes letter"));
        let (first, last): (u32, u32) = (first.parse().unwrap(), last.parse().unwrap());
        for n in first..=last {
            rules.insert(format!("{letter}{n}"));
        }
    }
    rules
}

/// The rule ids a text cites: a letter of L, D, E, S, K, R and digits, as a word.
fn cited_rules(text: &str) -> BTreeSet<String> {
    let mut cited = BTreeSet::new();
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let word_start = i == 0 || (!bytes[i - 1].is_ascii_alphanumeric() && bytes[i - 1] != b'_');
        if !word_start || !b"LDESKR".contains(b) {
            continue;
        }
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|d| d.is_ascii_digit())
            .count();
        let next = bytes.get(i + 1 + digits);
        if digits > 0 && !next.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            cited.insert(text[i..i + 1 + digits].to_string());
        }
    }
    cited
}

/// Every rule of docs/LANGUAGE.md has exactly one row in the rule table, in the
/// section whose heading names its letter, and no row names anything else. The rules
/// are the ranges of LANGUAGE.md's "**Rule numbers**" note, and the page cites no
/// rule outside them.
#[test]
fn every_rule_has_a_row() {
    let rules = language_rules();
    assert!(rules.len() >= 40, "read only {} rules", rules.len());
    let stray: Vec<String> = cited_rules(&read("docs/LANGUAGE.md"))
        .difference(&rules)
        .cloned()
        .collect();
    assert!(
        stray.is_empty(),
        "docs/LANGUAGE.md cites rules its **Rule numbers** note does not list: {stray:?}"
    );
    let rows = rule_table();
    let mut wrong = Vec::new();
    for rule in &rules {
        let n = rows.iter().filter(|r| &r.rule == rule).count();
        if n != 1 {
            wrong.push(format!("{rule} has {n} rows"));
        }
    }
    for row in &rows {
        let letter = row.rule.get(..1).unwrap_or_default();
        if !rules.contains(&row.rule) {
            wrong.push(format!(
                "docs/ARCHITECTURE.md:{}: `{}` is no rule of docs/LANGUAGE.md",
                row.line, row.rule
            ));
        } else if !row.section.contains(&format!("({letter})")) {
            wrong.push(format!(
                "docs/ARCHITECTURE.md:{}: {} sits in section `{}`",
                row.line, row.rule, row.section
            ));
        }
    }
    assert!(wrong.is_empty(), "the rule table's rows: {wrong:#?}");
}

// ---------------------------------------------------------------------------------
// Paths.
// ---------------------------------------------------------------------------------

/// The top folders of the repository: a word that starts with one of them is a path
/// from the root.
const TOP: [&str; 11] = [
    "src/",
    "runtime/",
    "tools/",
    "cli/",
    "tests/",
    "examples/",
    "benches/",
    "python/",
    "fuzz/",
    "docs/",
    ".ci/",
];

/// The checkout's files and folders, by their paths from the root (folders with a
/// trailing `/`): everything but build outputs, git's own folder and caches.
fn checkout() -> BTreeSet<String> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = format!("{rel}{name}");
            if e.path().is_dir() {
                if ![".git", "target", "__pycache__", ".pytest_cache"].contains(&name.as_str()) {
                    out.insert(format!("{path}/"));
                    walk(&e.path(), &format!("{path}/"), out);
                }
            } else {
                out.insert(path);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root(), "", &mut out);
    assert!(
        out.len() > 200,
        "the checkout walk found {} paths",
        out.len()
    );
    out
}

/// A character a path is written with; `<` and `>` enclose a placeholder such as
/// `<name>`.
fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-./*<>".contains(c)
}

/// The paths a line names: each maximal run of path characters that starts a word
/// (not preceded by a path character, `~`, `$` or `:`, so never the tail of a longer
/// or absolute path, a URL or a home folder), contains a `/`, and either starts with
/// a top folder ([`TOP`]) or is a Rust file named relative to a folder (`pool/grow.rs`
/// in the runtime's section). Trailing sentence punctuation is dropped; a `<…>`
/// placeholder becomes `*`.
fn paths_in(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut prev: Option<char> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let starts =
            path_char(c) && c != '/' && !prev.is_some_and(|p| path_char(p) || "~$:".contains(p));
        prev = Some(c);
        if !starts {
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = chars.peek() {
            if !path_char(d) {
                break;
            }
            end = j + d.len_utf8();
            prev = Some(d);
            chars.next();
        }
        // `**` around a word is Markdown's bold, not a glob; sentence punctuation may
        // stand on either side of it.
        let punctuation = ['.', ',', ':', ';'];
        let word = line[i..end].trim_start_matches('*');
        let word = word.trim_end_matches(punctuation);
        let word = word.strip_suffix("**").unwrap_or(word);
        let word = word.trim_end_matches(punctuation);
        let word = word
            .strip_suffix('>')
            .filter(|w| !w.contains('<'))
            .unwrap_or(word);
        if !word.contains('/') {
            continue;
        }
        let rooted = TOP.iter().any(|t| word.starts_with(t));
        let relative_rust = word.ends_with(".rs") && !word.starts_with('.');
        if rooted || relative_rust {
            let mut path = String::new();
            let mut in_placeholder = false;
            for ch in word.chars() {
                match ch {
                    '<' => {
                        in_placeholder = true;
                        path.push('*');
                    }
                    '>' => in_placeholder = false,
                    _ if !in_placeholder => path.push(ch),
                    _ => {}
                }
            }
            found.push(path);
        }
    }
    found
}

/// Whether `path`, as a doc names it, is in the checkout. A path from a top folder
/// must be there (a folder may be written with or without its trailing `/`); one
/// with `*` must match at least one file or folder; a Rust file named relative to a
/// folder must be the tail of a file's path.
fn exists(path: &str, tree: &BTreeSet<String>) -> bool {
    let rooted = TOP.iter().any(|t| path.starts_with(t));
    if !rooted {
        let tail = format!("/{path}");
        return tree.iter().any(|p| wildcard(&format!("*{tail}"), p, true));
    }
    if path.contains('*') {
        return tree
            .iter()
            .any(|p| wildcard(path, p, false) || wildcard(path, p.trim_end_matches('/'), false));
    }
    tree.contains(path) || tree.contains(&format!("{path}/"))
}

/// The targets of a line's Markdown links that point into the checkout (not a URL,
/// not an anchor of the page itself), resolved against `dir`, the page's folder; one
/// that climbs above the root keeps its leading `../`, and so is never found.
fn link_targets(line: &str, dir: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(close) = after.find(')') else {
            break;
        };
        let target = after[..close].split('#').next().unwrap_or_default();
        rest = &after[close..];
        if target.is_empty() || target.contains(':') {
            continue;
        }
        let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        let mut above = false;
        for segment in target.split('/') {
            match segment {
                "" | "." => {}
                ".." => above |= parts.pop().is_none(),
                name => parts.push(name),
            }
        }
        targets.push(if above {
            format!("../{target}")
        } else {
            parts.join("/")
        });
    }
    targets
}

/// The pages this check reads: docs/*.md and README.md.
fn pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    pages.sort();
    pages.push("README.md".to_string());
    assert!(pages.len() > 10, "found only {} pages", pages.len());
    pages
}

/// Every path a page names (see [`paths_in`] for what counts as one) is in the
/// checkout (see [`exists`]), and so is every page-relative Markdown link target, so a
/// moved or removed file cannot stay in the docs.
#[test]
fn every_path_a_doc_names_exists() {
    let tree = checkout();
    let mut missing = Vec::new();
    let mut checked = 0;
    for page in pages() {
        for (n, line) in read(&page).lines().enumerate() {
            for path in paths_in(line) {
                checked += 1;
                if !exists(&path, &tree) {
                    missing.push(format!("{page}:{}: {path}", n + 1));
                }
            }
            let dir = page.rsplit_once('/').map_or("", |(dir, _)| dir);
            for target in link_targets(line, dir) {
                checked += 1;
                if !tree.contains(&target) && !tree.contains(&format!("{target}/")) {
                    missing.push(format!("{page}:{}: link to {target}", n + 1));
                }
            }
        }
    }
    assert!(checked > 300, "read only {checked} paths in the docs");
    assert!(
        missing.is_empty(),
        "paths the docs name that are not in the checkout: {missing:#?}"
    );
}

/// The path and link readers' edges, on lines made up here: what counts as a path
/// and what does not.
#[test]
fn the_path_and_link_readers_take_repository_paths_and_nothing_else() {
    assert_eq!(
        paths_in(
            "see src/lib.rs, tests/ui/<name>.pool, **tests/docs.rs.**, **tests/ui/d2_*** and `runtime/src/pool/`."
        ),
        [
            "src/lib.rs",
            "tests/ui/*.pool",
            "tests/docs.rs",
            "tests/ui/d2_*",
            "runtime/src/pool/"
        ]
    );
    assert_eq!(paths_in("pool/grow.rs (R13)"), ["pool/grow.rs"]);
    for line in [
        "out/steps.jsonl",
        "https://example.org/src/lib.rs",
        "~/.cache/poolc/tests/x.rs",
        "/tmp/src/lib.rs",
        "**bold**",
        "a → b",
    ] {
        assert!(paths_in(line).is_empty(), "{line}: {:?}", paths_in(line));
    }
    assert_eq!(
        link_targets(
            "[a](../examples) [b](https://example.org/x) [c](#top) [d](RUNTIME.md#code-map)",
            "docs"
        ),
        ["examples", "docs/RUNTIME.md"]
    );
    assert_eq!(link_targets("[a](docs/ABI.md)", ""), ["docs/ABI.md"]);
    // A link that climbs out of the checkout keeps its climb, so it cannot exist (the
    // climb is spelled out at run time: tidy refuses such a path written in a file).
    let up = "../";
    assert_eq!(
        link_targets(&format!("[a]({up}{up}x)"), "docs"),
        [format!("{up}{up}{up}x")]
    );
    let tree = checkout();
    assert!(exists("tests/docs.rs", &tree));
    assert!(exists("runtime/src/pool", &tree));
    assert!(exists("tests/ui/*.pool", &tree));
    assert!(exists("pool/grow.rs", &tree));
    assert!(!exists("tests/no_such_file.rs", &tree));
    assert!(!exists("tests/ui/*.nothing", &tree));
    assert!(!exists("pool/no_such_file.rs", &tree));
}
