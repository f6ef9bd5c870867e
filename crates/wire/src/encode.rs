//! The frontend messages of a measured statement, encoded here: `Bind`
//! with text parameters, `Execute` of the unnamed portal, `Sync`. They
//! are written once per statement on the client's hot path, where
//! `postgres_protocol`'s general encoders (parameter and result format
//! lists, a closure per parameter, a length patched per field) cost
//! several hundred instructions more per transaction. Formats from
//! PostgreSQL's "Message Formats" (protocol-message-formats.html); the
//! rest of the protocol still goes through `postgres_protocol`.

use bytes::BytesMut;

use crate::{Error, TextParams};

/// `Execute` of the unnamed portal, every row (maximum 0), then `Sync`.
pub(crate) const EXECUTE_SYNC: [u8; 15] = [
    b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, // Execute: length 9, portal "", max rows 0
    b'S', 0, 0, 0, 4, // Sync: length 4
];

/// `Execute` of the unnamed portal, every row, without `Sync` (a
/// pipeline's statement).
pub(crate) const EXECUTE: &[u8] = EXECUTE_SYNC.split_at(10).0;

/// Appends a `Bind` of the unnamed portal to `statement` with `params` in
/// text format (no parameter format codes: all text; NULL as length -1)
/// and every result column in text format (no result format codes).
///
/// Errors: `Error::Protocol` for a statement name holding a NUL byte, more
/// than 32,767 parameters, or a message over 2 GiB; `buf` is then left
/// as it was.
pub(crate) fn bind_text(
    statement: &str,
    params: TextParams<'_>,
    buf: &mut BytesMut,
) -> Result<(), Error> {
    let n = i16::try_from(params.spans.len()).map_err(|_| {
        Error::Protocol(format!("{} parameters: at most 32767", params.spans.len()))
    })?;
    if statement.as_bytes().contains(&0) {
        return Err(Error::Protocol(format!(
            "statement name {statement:?} holds a NUL byte"
        )));
    }
    let values: usize = params.spans.iter().flatten().map(|r| r.len()).sum();
    // Type and length, portal "" and the name with their NULs, the two
    // counts, each parameter's length and value, the result format count.
    let size = 1 + 4 + 1 + statement.len() + 1 + 2 + 2 + 4 * params.spans.len() + values + 2;
    let len =
        i32::try_from(size - 1).map_err(|_| Error::Protocol("a Bind message over 2 GiB".into()))?;
    // The message is written into its place at once: `BufMut`'s `put_*`
    // each copy through a call of their own.
    let start = buf.len();
    buf.resize(start + size, 0);
    let mut w = Writer {
        out: &mut buf[start..],
        at: 0,
    };
    w.put(b"B");
    w.put(&len.to_be_bytes());
    w.put(b"\0"); // the unnamed portal
    w.put(statement.as_bytes());
    w.put(b"\0");
    w.put(&0i16.to_be_bytes()); // parameter format codes: none, all text
    w.put(&n.to_be_bytes());
    for span in params.spans {
        match span {
            Some(r) => {
                let value = &params.bytes[r.clone()];
                // Fits: the whole message's length does.
                w.put(&(value.len() as i32).to_be_bytes());
                w.put(value);
            }
            None => w.put(&(-1i32).to_be_bytes()),
        }
    }
    w.put(&0i16.to_be_bytes()); // result format codes: none, all text
    debug_assert_eq!(w.at, size);
    Ok(())
}

/// Writes into a message's bytes, in order.
struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.out[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres_protocol::message::frontend;
    use proptest::prelude::*;

    /// `postgres_protocol`'s encoding of the same messages, the reference.
    fn reference(statement: &str, params: &TextParams<'_>, sync: bool) -> Vec<u8> {
        let mut buf = BytesMut::new();
        frontend::bind(
            "",
            statement,
            std::iter::empty(),
            params.spans.iter(),
            |p, buf| match p {
                Some(r) => {
                    buf.extend_from_slice(&params.bytes[r.clone()]);
                    Ok(postgres_protocol::IsNull::No)
                }
                None => Ok(postgres_protocol::IsNull::Yes),
            },
            std::iter::empty(),
            &mut buf,
        )
        .map_err(|_| ())
        .expect("encodes");
        frontend::execute("", 0, &mut buf).expect("encodes");
        if sync {
            frontend::sync(&mut buf);
        }
        buf.to_vec()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Byte for byte what `postgres_protocol` writes, for any name,
        /// values and NULLs, after whatever the buffer held before.
        #[test]
        fn bind_execute_sync_match_postgres_protocol(
            name in "[A-Za-z0-9_]{0,12}",
            values in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..12)),
                0..8,
            ),
            before in proptest::collection::vec(any::<u8>(), 0..5),
            sync in any::<bool>(),
        ) {
            let mut bytes = Vec::new();
            let spans: Vec<_> = values
                .iter()
                .map(|v| {
                    v.as_ref().map(|v| {
                        let s = bytes.len();
                        bytes.extend_from_slice(v);
                        s..bytes.len()
                    })
                })
                .collect();
            let params = TextParams { bytes: &bytes, spans: &spans };
            let mut buf = BytesMut::from(&before[..]);
            bind_text(&name, TextParams { bytes: &bytes, spans: &spans }, &mut buf).unwrap();
            buf.extend_from_slice(if sync { &EXECUTE_SYNC[..] } else { EXECUTE });
            prop_assert_eq!(&buf[..before.len()], &before[..]);
            prop_assert_eq!(&buf[before.len()..], &reference(&name, &params, sync)[..]);
        }
    }

    #[test]
    fn a_name_with_nul_is_refused_and_the_buffer_kept() {
        let mut buf = BytesMut::from(&b"xy"[..]);
        let e = bind_text("a\0b", TextParams::NONE, &mut buf).unwrap_err();
        assert!(e.to_string().contains("NUL"), "{e}");
        assert_eq!(&buf[..], b"xy");
    }
}
