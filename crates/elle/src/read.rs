//! Reading histories from text: isobench's own (`histories/run-N.jsonl`,
//! one [`Txn`] per line, as the `list-append` workload writes them) and
//! Jepsen/Elle's list-append histories in JSON (as `elle-cli` reads them:
//! one operation map per line, or one JSON array of them).
//!
//! A Jepsen operation is `{"type": "ok", "f": "txn", "process": 3,
//! "value": [["append", 5, 12], ["r", 5, [1 12]]]}` (Kingsbury & Alvaro,
//! "Elle", VLDB 2020, section 4; Jepsen's `jepsen.tests.cycle.append`).
//! Only completions count: `ok` is committed, `fail` aborted, `info` an
//! unknown outcome (its reads are unknown: a `null` or missing list);
//! `invoke` operations are skipped. Keys and values must be non-negative
//! integers, as in Jepsen's tests. EDN histories are not read: convert them
//! to JSON first (e.g. with `jet`).

use serde_json::Value as Json;

use super::history::{History, Op, Status, Txn};

/// A history that cannot be read, at `line` (1-based; for a JSON array,
/// the line where the array starts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ReadError {
    pub line: usize,
    pub message: String,
}

/// Reads a history written as isobench JSON lines or as Jepsen/Elle JSON
/// (see the module docs); blank lines are skipped. The format is chosen per
/// operation: a map with `ops` is an isobench transaction, one with
/// `type` and `value` a Jepsen operation.
///
/// Errors: text that is not JSON, an operation of neither shape, a
/// micro-operation that is not `append`/`r` with integer key and values.
pub fn parse(text: &str) -> Result<History, ReadError> {
    let mut txns = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let line = text[..text.len() - trimmed.len()].matches('\n').count() + 1;
        let ops: Vec<Json> = serde_json::from_str(trimmed).map_err(|e| ReadError {
            line: line + e.line().saturating_sub(1),
            message: format!("not a JSON array of operations: {e}"),
        })?;
        for op in ops {
            txns.extend(txn(&op).map_err(|message| ReadError { line, message })?);
        }
        return Ok(History { txns });
    }
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let err = |message: String| ReadError {
            line: i + 1,
            message,
        };
        let op: Json = serde_json::from_str(l).map_err(|e| err(format!("not JSON: {e}")))?;
        txns.extend(txn(&op).map_err(err)?);
    }
    Ok(History { txns })
}

/// The transaction of one operation: `None` for a Jepsen invocation.
fn txn(op: &Json) -> Result<Option<Txn>, String> {
    if op.get("ops").is_some() {
        return serde_json::from_value(op.clone())
            .map(Some)
            .map_err(|e| format!("not an isobench transaction: {e}"));
    }
    let kind = op.get("type").and_then(Json::as_str).ok_or(
        "neither an isobench transaction (\"ops\") nor a Jepsen operation (\"type\", \"value\")",
    )?;
    let status = match kind {
        "invoke" => return Ok(None),
        "ok" => Status::Committed,
        "fail" => Status::Aborted { sqlstate: None },
        "info" => Status::Unknown,
        other => {
            return Err(format!(
                "operation type '{other}' (use invoke, ok, fail or info)"
            ));
        }
    };
    if let Some(f) = op.get("f").and_then(Json::as_str)
        && f != "txn"
    {
        return Err(format!(
            "operation f '{f}': only list-append txn operations are read"
        ));
    }
    let process = match op.get("process") {
        Some(Json::Number(n)) => n
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .ok_or_else(|| format!("process {n}: not a client number"))?,
        // Jepsen's nemesis has process "nemesis"; it runs no transactions.
        _ => u32::MAX,
    };
    let micro = op
        .get("value")
        .and_then(Json::as_array)
        .ok_or("\"value\" is not a list of micro-operations")?;
    let ops = micro
        .iter()
        .map(|m| micro_op(m, &status))
        .collect::<Result<_, _>>()?;
    Ok(Some(Txn {
        process,
        status,
        ops,
        ..Txn::default()
    }))
}

/// `["append", k, v]` or `["r", k, [v ...] | null]`.
fn micro_op(m: &Json, status: &Status) -> Result<Op, String> {
    let shown = || m.to_string();
    let parts = m
        .as_array()
        .filter(|p| p.len() == 3)
        .ok_or_else(|| format!("{}: not [f, key, value]", shown()))?;
    let int = |v: &Json, what: &str| {
        v.as_u64()
            .ok_or_else(|| format!("{}: the {what} is not a non-negative integer", shown()))
    };
    let key = int(&parts[1], "key")?;
    match parts[0].as_str() {
        Some("append") => Ok(Op::Append {
            key,
            value: int(&parts[2], "value")?,
        }),
        Some("r") => {
            let values = match &parts[2] {
                // An unknown outcome's reads are not used (Elle: :info).
                _ if *status == Status::Unknown => None,
                Json::Null => None,
                Json::Array(vs) => Some(
                    vs.iter()
                        .map(|v| int(v, "value read"))
                        .collect::<Result<_, _>>()?,
                ),
                _ => return Err(format!("{}: a read's value is a list or null", shown())),
            };
            Ok(Op::Read { key, values })
        }
        _ => Err(format!("{}: micro-operation is not append or r", shown())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jepsen_operations_become_transactions_by_completion() {
        let text = r#"
{"type":"invoke","f":"txn","process":0,"value":[["append",1,1],["r",1,null]]}
{"type":"ok","f":"txn","process":0,"value":[["append",1,1],["r",1,[1]]]}
{"type":"fail","f":"txn","process":1,"value":[["append",2,5]]}
{"type":"info","f":"txn","process":2,"value":[["r",2,[5]],["append",2,6]]}
"#;
        let h = parse(text).unwrap();
        assert_eq!(h.len(), 3, "the invocation is skipped");
        assert_eq!(h.txns[0].status, Status::Committed);
        assert_eq!(
            h.txns[0].ops[1],
            Op::Read {
                key: 1,
                values: Some(vec![1])
            }
        );
        assert_eq!(h.txns[1].status, Status::Aborted { sqlstate: None });
        assert_eq!(h.txns[2].status, Status::Unknown);
        assert_eq!(
            h.txns[2].ops[0],
            Op::Read {
                key: 2,
                values: None
            },
            "an unknown outcome's reads are not used"
        );
        // The same as one JSON array.
        let array = format!("[{}]", text.trim().lines().collect::<Vec<_>>().join(",\n"));
        assert_eq!(parse(&array).unwrap(), h);
    }

    #[test]
    fn isobench_lines_read_back_what_the_workload_wrote() {
        let t = Txn {
            process: 4,
            status: Status::Aborted {
                sqlstate: Some("40001".into()),
            },
            ops: vec![
                Op::Append { key: 3, value: 40 },
                Op::Read {
                    key: 3,
                    values: Some(vec![7, 40]),
                },
            ],
            read_only: true,
            pid: Some(4242),
            timing: Some(crate::Timing {
                begin_us: 1_764_345_600_000_000,
                ops: vec![[12, 80], [95, 160]],
                commit: None,
            }),
        };
        let line = serde_json::to_string(&t).unwrap();
        let h = parse(&format!("{line}\n\n{line}\n")).unwrap();
        assert_eq!(h.txns, vec![t.clone(), t]);
    }

    #[test]
    fn bad_operations_name_their_line() {
        for (text, line, needle) in [
            (
                "{\"type\":\"ok\",\"value\":[[\"w\",1,2]]}",
                1,
                "not append or r",
            ),
            (
                "\n{\"type\":\"ok\",\"value\":[[\"append\",\"x\",2]]}",
                2,
                "key is not",
            ),
            (
                "{\"type\":\"ok\",\"value\":[[\"r\",1,3]]}",
                1,
                "list or null",
            ),
            ("{\"type\":\"yes\",\"value\":[]}", 1, "operation type 'yes'"),
            (
                "{\"type\":\"ok\",\"f\":\"read\",\"value\":[]}",
                1,
                "only list-append",
            ),
            ("{\"x\":1}", 1, "neither an isobench"),
            ("not json", 1, "not JSON"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.message.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn a_jepsen_g1c_history_is_found_by_the_checker() {
        // T0 appends 1 to k1 and reads k2 = [2]; T1 appends 2 to k2 and
        // reads k1 = [1]: each read the other's write (wr both ways).
        let text = r#"[
{"type":"ok","f":"txn","process":0,"value":[["append",1,1],["r",2,[2]]]},
{"type":"ok","f":"txn","process":1,"value":[["append",2,2],["r",1,[1]]]}
]"#;
        let r = super::super::check(&parse(text).unwrap());
        // One cycle (as Elle counts); both wr edges close it.
        assert_eq!(r.count(super::super::Class::G1c), 1, "{r:?}");
        assert_eq!(r.finding(super::super::Class::G1c).edges, 2, "{r:?}");
        assert_eq!(r.total(), 1, "{r:?}");
    }
}
