//! A run's latencies as an HdrHistogram interval log (`.hlog`): per
//! second of the measured window, each transaction type's latency
//! histogram (µs, first attempt's start to commit, as in results.json),
//! tagged by the type's name, serialized by the `hdrhistogram` crate's
//! interval-log writer (V2 with DEFLATE, base64). HdrHistogram's own tools
//! (HistogramLogProcessor, HdrHistogramVisualizer) and the crate's
//! `IntervalLogIterator` read it; its `BaseTime` is the window's start
//! (wall clock), so each interval's start is seconds into the window.
//! Format: the HdrHistogram interval log, as documented in the `hdrhistogram`
//! crate's `serialization::interval_log` module and in HdrHistogram's
//! `HistogramLogWriter` (Java).

use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use crate::metrics::Interval;

/// An interval log being written, in memory (a few hundred bytes per
/// interval and type).
#[derive(Default)]
pub struct Log {
    buf: Vec<u8>,
    serializer: Option<V2DeflateSerializer>,
    /// When the first interval was written (the log's base time).
    base: Option<SystemTime>,
}

/// A transaction type's name as an interval-log tag: the format's
/// separators (`,`, space, line breaks) become `_`.
pub fn tag_of(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ',' | ' ' | '\r' | '\n' => '_',
            c => c,
        })
        .collect()
}

impl Log {
    /// Appends `tick`'s latency histogram of each transaction type that
    /// committed something, starting `from` the window's start and lasting
    /// `len`, tagged by its name in `names`. A histogram that cannot be
    /// serialized is left out (it never happens with the crate's V2
    /// serializer and u64 counts).
    pub fn write(&mut self, tick: &Interval, names: &[&str], from: Duration, len: Duration) {
        if self.base.is_none() {
            // The wall clock at the window's start.
            let base = SystemTime::now() - from - len;
            let mut serializer = V2DeflateSerializer::new();
            let header = IntervalLogWriterBuilder::new()
                .add_comment("isobench: latency (µs) per transaction type, one interval a second of the measured window")
                .with_start_time(base)
                .with_base_time(base)
                .begin_log_with(&mut self.buf, &mut serializer)
                .map(drop);
            if header.is_err() {
                return;
            }
            self.base = Some(base);
            self.serializer = Some(serializer);
        }
        let serializer = self.serializer.as_mut().expect("set with base");
        for (t, name) in tick.types.iter().zip(names) {
            if t.latency_us.is_empty() {
                continue;
            }
            let tag = tag_of(name);
            let Ok(mut w) =
                IntervalLogWriterBuilder::new().begin_log_with(&mut self.buf, serializer)
            else {
                return;
            };
            let _ = w.write_histogram(&t.latency_us, from, len, Tag::new(&tag));
        }
    }

    /// The log's bytes; empty when no interval was written (`window`
    /// never opened).
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Interval;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn intervals_read_back_as_the_histograms_written() {
        let mut log = Log::default();
        let names = ["builtin: tpcb-like", "select"];
        let mut totals = [crate::model::new_histogram(), crate::model::new_histogram()];
        for second in 0..3u64 {
            let mut tick = Interval::new(2);
            for v in 1..=(100 * (second + 1)) {
                tick.types[0].latency_us.record(v * 37).unwrap();
                totals[0].record(v * 37).unwrap();
            }
            if second == 1 {
                tick.types[1].latency_us.record(5_000).unwrap();
                totals[1].record(5_000).unwrap();
            }
            log.write(
                &tick,
                &names,
                Duration::from_secs(second),
                Duration::from_secs(1),
            );
        }
        let bytes = log.finish();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("#[BaseTime: "), "{text}");
        let mut read = [crate::model::new_histogram(), crate::model::new_histogram()];
        let mut intervals = 0;
        let mut de = Deserializer::new();
        for e in IntervalLogIterator::new(&bytes) {
            let LogEntry::Interval(i) = e.unwrap() else {
                continue;
            };
            intervals += 1;
            let k = match i.tag().map(|t| t.as_str()) {
                Some("builtin:_tpcb-like") => 0,
                Some("select") => 1,
                other => panic!("tag {other:?}"),
            };
            let raw = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                i.encoded_histogram(),
            )
            .unwrap();
            let h: hdrhistogram::Histogram<u64> =
                de.deserialize(&mut std::io::Cursor::new(raw)).unwrap();
            read[k].add(&h).unwrap();
        }
        // Three seconds of the first type, one of the second.
        assert_eq!(intervals, 4);
        for k in 0..2 {
            assert_eq!(read[k].len(), totals[k].len());
            assert_eq!(
                read[k].value_at_quantile(0.99),
                totals[k].value_at_quantile(0.99)
            );
            assert_eq!(read[k].max(), totals[k].max());
        }
    }

    #[test]
    fn tags_have_no_separators() {
        assert_eq!(tag_of("builtin: tpcb-like"), "builtin:_tpcb-like");
        assert_eq!(tag_of("a,b"), "a_b");
    }
}
