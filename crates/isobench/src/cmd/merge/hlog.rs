//! `histograms/run-N.hlog`: interval logs merged second by second.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};

use crate::model::{decode_histogram, new_histogram};

/// One interval of an interval log: its start (whole seconds into the
/// window), length, tag and histogram.
pub(super) type Interval = (i64, Duration, Option<String>, Histogram<u64>);

/// The merged intervals of one second: (tag, length, histogram).
pub(super) type Second = Vec<(Option<String>, Duration, Histogram<u64>)>;

/// The intervals of interval log `bytes` (as [`crate::engine::hlog`]
/// writes them), each start shifted by `shift` seconds, and the log's
/// `BaseTime`.
///
/// Errors: a line or histogram that does not parse.
pub fn read_hlog(bytes: &[u8], shift: i64) -> Result<(Vec<Interval>, Option<Duration>), String> {
    let mut out = Vec::new();
    let mut base = None;
    for e in IntervalLogIterator::new(bytes) {
        match e.map_err(|e| format!("{e:?}"))? {
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::StartTime(_) => {}
            LogEntry::Interval(i) => {
                let h = decode_histogram(i.encoded_histogram())?;
                let start = i.start_timestamp().as_secs_f64().round() as i64 + shift;
                out.push((
                    start,
                    i.duration(),
                    i.tag().map(|t| t.as_str().to_string()),
                    h,
                ));
            }
        }
    }
    Ok((out, base))
}

/// Merges interval logs: the histograms of the same start second and tag
/// added, in order of start then first appearance of the tag, written with
/// base time `base` (the earliest window start). Returns the log and, per
/// second, the p99 of all tags together, ms.
///
/// Errors: an interval that cannot be serialized.
pub fn merge_hlogs(
    logs: Vec<Vec<Interval>>,
    base: Option<SystemTime>,
) -> Result<(Vec<u8>, BTreeMap<i64, f64>), String> {
    let mut merged: BTreeMap<i64, Second> = BTreeMap::new();
    for log in logs {
        for (start, len, tag, h) in log {
            let slot = merged.entry(start).or_default();
            match slot.iter_mut().find(|(t, _, _)| *t == tag) {
                Some((_, l, sum)) => {
                    *l = (*l).max(len);
                    sum.add(&h).map_err(|e| format!("{e:?}"))?;
                }
                None => {
                    let mut sum = new_histogram();
                    sum.add(&h).map_err(|e| format!("{e:?}"))?;
                    slot.push((tag, len, sum));
                }
            }
        }
    }
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder.add_comment(
        "isobench merge: latency (µs) per transaction type, one interval a second of the measured window, the merged directories' intervals of the same second and tag added",
    );
    if let Some(b) = base {
        builder.with_start_time(b).with_base_time(b);
    }
    let mut w = builder
        .begin_log_with(&mut buf, &mut serializer)
        .map_err(|e| e.to_string())?;
    let mut p99 = BTreeMap::new();
    for (start, slot) in &merged {
        let mut all = new_histogram();
        for (tag, len, h) in slot {
            all.add(h).map_err(|e| format!("{e:?}"))?;
            let from = Duration::from_secs(u64::try_from(*start).unwrap_or(0));
            w.write_histogram(h, from, *len, tag.as_deref().and_then(Tag::new))
                .map_err(|e| format!("{e:?}"))?;
        }
        if !all.is_empty() {
            p99.insert(*start, all.value_at_quantile(0.99) as f64 / 1000.0);
        }
    }
    drop(w);
    Ok((buf, p99))
}
