//! Latency histograms as stored: one shape for every recorder (1 µs to
//! one hour, 3 significant digits) and one text encoding, so the engine,
//! the store, the reports and `isobench merge` read each other's
//! histograms.

use hdrhistogram::Histogram;

/// A fresh latency histogram in µs: 1 µs .. 1 h, 3 significant digits,
/// growing past 1 h if needed.
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds");
    h.auto(true);
    h
}

/// Serializes a histogram in HdrHistogram's V2 + DEFLATE format, base64
/// encoded (the form other HdrHistogram implementations read).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    use base64::Engine;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serialize to memory");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Reverses [`encode_histogram`]. Errors: malformed base64 or histogram.
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, String> {
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| e.to_string())?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("{e:?}"))
}
