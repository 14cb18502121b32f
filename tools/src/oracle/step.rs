//! One line of steps.jsonl as a typed record: parsed straight into its fields (a
//! line that does not parse so is parsed again as a JSON value, to name the field
//! that is wrong), printed back byte for byte as the oracle writes it (keys in its
//! order, compact), and compared field by field. It knows nothing of files or of the
//! host.

use serde::Deserialize;
use serde_json::Value;

/// One line of steps.jsonl (docs/CONFORMANCE.md "steps.jsonl"), without `sched`. It
/// deserializes from a well-formed line directly (other keys, such as `sched`, are
/// ignored), which is [`Step::parse`]'s fast way.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Step {
    pub step: u64,
    pub arrivals: Vec<String>,
    /// `(id, "new" | "resumed", hit tokens, scheduled tokens)`.
    pub admitted: Vec<(String, String, u64, u64)>,
    pub cont: Vec<(String, u64)>,
    pub preempted: Vec<String>,
    pub finished: Vec<String>,
    pub n_sched_tokens: u64,
    pub n_decode: u64,
    pub running: u64,
    pub waiting: u64,
    pub free_blocks: u64,
}

/// The fields compared, in the file's order.
pub const STEP_FIELDS: [&str; 11] = [
    "step",
    "arrivals",
    "admitted",
    "cont",
    "preempted",
    "finished",
    "n_sched_tokens",
    "n_decode",
    "running",
    "waiting",
    "free_blocks",
];

pub(super) fn quote(s: &str) -> String {
    // serde_json escapes exactly as Python's json.dumps does for printable ASCII
    // (and the oracle's ids are `r<n>`), so matching lines are byte-identical.
    Value::from(s).to_string()
}

fn id_list(ids: &[String]) -> String {
    let items: Vec<String> = ids.iter().map(|s| quote(s)).collect();
    format!("[{}]", items.join(","))
}

impl Step {
    /// Whether vLLM did not call `schedule()` in this step: nothing was unfinished
    /// (docs/CONFORMANCE.md "steps.jsonl": an idle gap between arrivals).
    pub fn is_idle(&self) -> bool {
        self.arrivals.is_empty()
            && self.admitted.is_empty()
            && self.cont.is_empty()
            && self.preempted.is_empty()
            && self.finished.is_empty()
            && self.n_sched_tokens == 0
            && self.running == 0
            && self.waiting == 0
    }

    /// The compact JSON line, keys in the oracle's order (no newline).
    pub fn to_line(&self) -> String {
        let admitted: Vec<String> = self
            .admitted
            .iter()
            .map(|(id, kind, hit, n)| format!("[{},{},{hit},{n}]", quote(id), quote(kind)))
            .collect();
        let cont: Vec<String> = self
            .cont
            .iter()
            .map(|(id, n)| format!("[{},{n}]", quote(id)))
            .collect();
        format!(
            "{{\"step\":{},\"arrivals\":{},\"admitted\":[{}],\"cont\":[{}],\"preempted\":{},\
             \"finished\":{},\"n_sched_tokens\":{},\"n_decode\":{},\"running\":{},\
             \"waiting\":{},\"free_blocks\":{}}}",
            self.step,
            id_list(&self.arrivals),
            admitted.join(","),
            cont.join(","),
            id_list(&self.preempted),
            id_list(&self.finished),
            self.n_sched_tokens,
            self.n_decode,
            self.running,
            self.waiting,
            self.free_blocks
        )
    }

    /// The names of the fields in which `self` and `other` differ, in file order.
    pub fn differing_fields(&self, other: &Step) -> Vec<&'static str> {
        let same = [
            self.step == other.step,
            self.arrivals == other.arrivals,
            self.admitted == other.admitted,
            self.cont == other.cont,
            self.preempted == other.preempted,
            self.finished == other.finished,
            self.n_sched_tokens == other.n_sched_tokens,
            self.n_decode == other.n_decode,
            self.running == other.running,
            self.waiting == other.waiting,
            self.free_blocks == other.free_blocks,
        ];
        STEP_FIELDS
            .iter()
            .zip(same)
            .filter(|(_, s)| !s)
            .map(|(f, _)| *f)
            .collect()
    }

    /// Parses a step line's text, `Ok(None)` for a summary line (one with a
    /// `summary` key). Most lines are well-formed steps and deserialize straight into
    /// a `Step`, without building a JSON value (half of `poolc conform`'s reading
    /// cost, issue #16 item 3); any other line is read as a value, so that a bad one
    /// gets [`Step::from_value`]'s message naming its field and a good summary line is
    /// told apart. The straight way is taken only where it reads what the value does:
    /// an object (serde's derive would also take an array of the fields in order)
    /// with no escape (a key such as `"\u0073ummary"` is `summary`) and no `summary`.
    pub fn parse(text: &str) -> Result<Option<Step>, String> {
        if text.trim_start().starts_with('{')
            && !text.contains('\\')
            && !text.contains("\"summary\"")
            && let Ok(step) = serde_json::from_str::<Step>(text)
        {
            return Ok(Some(step));
        }
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if v.get("summary").is_some() {
            return Ok(None);
        }
        Step::from_value(&v).map(Some)
    }

    /// Parses a step line read as a JSON value; the error says which field is wrong.
    pub fn from_value(v: &Value) -> Result<Step, String> {
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("`{k}` is missing or not a whole number ≥ 0"))
        };
        let arr = |k: &str| {
            v.get(k)
                .and_then(Value::as_array)
                .ok_or_else(|| format!("`{k}` is missing or not a list"))
        };
        let ids = |k: &str| -> Result<Vec<String>, String> {
            arr(k)?
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("`{k}` holds a non-string"))
                })
                .collect()
        };
        let admitted = arr("admitted")?
            .iter()
            .map(|a| match a.as_array().map(Vec::as_slice) {
                Some([id, kind, hit, n]) => {
                    match (id.as_str(), kind.as_str(), hit.as_u64(), n.as_u64()) {
                        (Some(id), Some(kind), Some(hit), Some(n)) => {
                            Ok((id.to_string(), kind.to_string(), hit, n))
                        }
                        _ => Err(format!(
                            "`admitted` entry {a} is not [id, kind, hit, tokens]"
                        )),
                    }
                }
                _ => Err(format!(
                    "`admitted` entry {a} is not [id, kind, hit, tokens]"
                )),
            })
            .collect::<Result<_, _>>()?;
        let cont = arr("cont")?
            .iter()
            .map(|c| match c.as_array().map(Vec::as_slice) {
                Some([id, n]) => match (id.as_str(), n.as_u64()) {
                    (Some(id), Some(n)) => Ok((id.to_string(), n)),
                    _ => Err(format!("`cont` entry {c} is not [id, tokens]")),
                },
                _ => Err(format!("`cont` entry {c} is not [id, tokens]")),
            })
            .collect::<Result<_, _>>()?;
        Ok(Step {
            step: num("step")?,
            arrivals: ids("arrivals")?,
            admitted,
            cont,
            preempted: ids("preempted")?,
            finished: ids("finished")?,
            n_sched_tokens: num("n_sched_tokens")?,
            n_decode: num("n_decode")?,
            running: num("running")?,
            waiting: num("waiting")?,
            free_blocks: num("free_blocks")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"step":7,"arrivals":["r3"],"admitted":[["r3","new",16,40]],"cont":[["r1",8]],"preempted":[],"finished":["r0"],"n_sched_tokens":49,"n_decode":1,"running":2,"waiting":0,"free_blocks":12,"sched":{"anything":[1,2]}}"#;

    fn by_value(text: &str) -> Result<Step, String> {
        Step::from_value(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn a_well_formed_line_parses_straight_to_what_its_value_gives() {
        let step = Step::parse(LINE).unwrap().unwrap();
        assert_eq!(step, by_value(LINE).unwrap());
        assert_eq!(
            step.admitted,
            [("r3".to_string(), "new".to_string(), 16, 40)]
        );
        assert_eq!(step.cont, [("r1".to_string(), 8)]);
        assert_eq!(
            (step.step, step.n_sched_tokens, step.free_blocks),
            (7, 49, 12)
        );
        // `sched` is not part of the record; the line prints back without it.
        assert!(!step.to_line().contains("\"sched\""));
    }

    #[test]
    fn a_summary_line_is_told_apart_and_an_id_named_summary_is_not_one() {
        assert_eq!(Step::parse(r#"{"summary":true,"steps":3}"#), Ok(None));
        let odd = LINE.replace("\"r0\"", "\"summary\"");
        let step = Step::parse(&odd).unwrap().unwrap();
        assert_eq!(step.finished, ["summary"]);
    }

    #[test]
    fn a_bad_line_gets_the_message_naming_its_field() {
        for (from, to, message) in [
            (
                "\"n_decode\":1",
                "\"n_decode\":-1",
                "`n_decode` is missing or not a whole number ≥ 0",
            ),
            (
                "\"running\":2,",
                "",
                "`running` is missing or not a whole number ≥ 0",
            ),
            (
                "\"waiting\":0",
                "\"waiting\":0.5",
                "`waiting` is missing or not a whole number ≥ 0",
            ),
            (
                "[\"r1\",8]",
                "[\"r1\"]",
                "`cont` entry [\"r1\"] is not [id, tokens]",
            ),
            (
                "\"finished\":[\"r0\"]",
                "\"finished\":[0]",
                "`finished` holds a non-string",
            ),
        ] {
            assert!(LINE.contains(from), "{from}");
            let bad = LINE.replace(from, to);
            assert_eq!(Step::parse(&bad), Err(message.to_string()), "{bad}");
            assert_eq!(by_value(&bad), Err(message.to_string()), "{bad}");
        }
        let e = Step::parse("{\"step\": oops}").unwrap_err();
        assert!(e.starts_with("not JSON: "), "{e}");
    }

    #[test]
    fn the_straight_way_takes_nothing_the_value_refuses_or_calls_a_summary() {
        // serde's derive would read an array of the fields in order as a step.
        let array = "[0,[],[],[],[],[],0,0,0,0,0]";
        assert!(
            serde_json::from_str::<Step>(array).is_ok(),
            "the derive takes it"
        );
        let refused = by_value(array).unwrap_err();
        assert_eq!(Step::parse(array), Err(refused));
        // An escaped `summary` key is a summary line, step fields or not.
        let escaped = LINE.replacen("{", "{\"\\u0073ummary\":true,", 1);
        assert!(
            serde_json::from_str::<Step>(&escaped).is_ok(),
            "the derive takes it"
        );
        assert_eq!(Step::parse(&escaped), Ok(None));
        // Escapes elsewhere read as the value reads them.
        let id = LINE.replace("\"r3\"", "\"r\\u0033\"");
        assert_eq!(Step::parse(&id), Ok(Some(by_value(&id).unwrap())));
        assert_eq!(Step::parse(&id).unwrap().unwrap().arrivals, ["r3"]);
    }
}
