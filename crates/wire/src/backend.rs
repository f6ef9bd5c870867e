//! Backend messages read where they lie in the connection's read buffer.
//!
//! Every backend message is a type byte, a length (a big-endian `i32`
//! that counts itself but not the type byte), then the body (PostgreSQL
//! documentation, "Frontend/Backend Protocol", "Message Formats"). A
//! [`Frame`] is one whole message at the front of the buffer; the
//! functions here read the bodies of the few messages a measured
//! statement's answer holds (`DataRow`, `CommandComplete`,
//! `ReadyForQuery`, `ErrorResponse`) and of the statement descriptions,
//! as slices of the buffer, and the buffer then drops the message by
//! advancing past it.
//!
//! Why not `postgres-protocol`'s `Message::parse`: it splits every
//! message off the buffer as a `Bytes` of its own, which turns the buffer
//! into a shared one and costs an atomic reference-count increment and
//! decrement per message, four or five per select-only transaction, plus
//! a UTF-8 check of every command tag. In the profile of a select-only
//! run those were about 7 % of the client thread's time (BENCHMARKS.md,
//! "Where the client thread's time goes"). Authentication, which happens
//! once per connection, still goes through `Message::parse` ([`decode`]).

use std::ops::Range;

use bytes::BytesMut;
use postgres_protocol::message::backend::Message;

use super::Error;

/// The type byte and length that start every message (bytes).
pub(super) const HEADER: usize = 5;

/// Message type bytes of the backend messages read here.
pub(super) mod tag {
    pub const AUTHENTICATION: u8 = b'R';
    pub const BACKEND_KEY_DATA: u8 = b'K';
    pub const COMMAND_COMPLETE: u8 = b'C';
    pub const COPY_IN_RESPONSE: u8 = b'G';
    pub const DATA_ROW: u8 = b'D';
    pub const EMPTY_QUERY_RESPONSE: u8 = b'I';
    pub const ERROR_RESPONSE: u8 = b'E';
    pub const NOTICE_RESPONSE: u8 = b'N';
    pub const NOTIFICATION_RESPONSE: u8 = b'A';
    pub const PARAMETER_DESCRIPTION: u8 = b't';
    pub const PARAMETER_STATUS: u8 = b'S';
    pub const READY_FOR_QUERY: u8 = b'Z';
    pub const ROW_DESCRIPTION: u8 = b'T';
}

/// A whole message in the read buffer: its type byte, where it starts
/// and its length with the header (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Frame {
    pub tag: u8,
    pub start: usize,
    pub len: usize,
}

impl Frame {
    /// Where the body lies in the buffer.
    pub fn body(self) -> Range<usize> {
        self.start + HEADER..self.start + self.len
    }

    /// Where the whole message (header and body) lies in the buffer.
    pub fn whole(self) -> Range<usize> {
        self.start..self.start + self.len
    }
}

/// What the front of the read buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Front {
    Whole(Frame),
    /// Part of a message: this many bytes more are needed at least.
    Short(usize),
}

/// The message at the front of `buf`.
///
/// Errors: a length below 4, which no server sends (the stream is out of
/// step).
pub(super) fn front(buf: &[u8]) -> Result<Front, Error> {
    let Some(header) = buf.get(..HEADER) else {
        return Ok(Front::Short(HEADER - buf.len()));
    };
    let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    if len < 4 {
        return Err(Error::Protocol(format!(
            "protocol error: message '{}' of invalid length {len}",
            header[0].escape_ascii()
        )));
    }
    let whole = len as usize + 1;
    Ok(if buf.len() >= whole {
        Front::Whole(Frame {
            tag: header[0],
            start: 0,
            len: whole,
        })
    } else {
        Front::Short(whole - buf.len())
    })
}

/// Reads a message body front to back; every read past its end is a
/// protocol error naming the message.
struct Reader<'a> {
    body: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(body: &'a [u8], what: &'static str) -> Self {
        Reader { body, pos: 0, what }
    }

    fn take(&mut self, n: usize) -> Result<Range<usize>, Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.body.len());
        let Some(end) = end else {
            return Err(Error::Protocol(format!(
                "protocol error: {} message ends early",
                self.what
            )));
        };
        let r = self.pos..end;
        self.pos = end;
        Ok(r)
    }

    fn i16(&mut self) -> Result<i16, Error> {
        let r = self.take(2)?;
        Ok(i16::from_be_bytes([
            self.body[r.start],
            self.body[r.start + 1],
        ]))
    }

    fn i32(&mut self) -> Result<i32, Error> {
        let r = self.take(4)?;
        let b = &self.body[r];
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A NUL-terminated string, without its NUL.
    fn cstr(&mut self) -> Result<&'a [u8], Error> {
        let rest = &self.body[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == 0) else {
            return Err(Error::Protocol(format!(
                "protocol error: {} message has an unterminated string",
                self.what
            )));
        };
        self.pos += n + 1;
        Ok(&rest[..n])
    }
}

/// The values of a `DataRow` body: each value's range in `body`, `None`
/// for NULL.
///
/// Errors: a body shorter than its counts say.
pub(super) fn data_row(
    body: &[u8],
    mut each: impl FnMut(Option<Range<usize>>),
) -> Result<(), Error> {
    let mut r = Reader::new(body, "DataRow");
    let n = r.i16()?;
    for _ in 0..n {
        let len = r.i32()?;
        each(if len < 0 {
            None
        } else {
            Some(r.take(len as usize)?)
        });
    }
    Ok(())
}

/// The row count at the end of a `CommandComplete`'s tag (`UPDATE 1`,
/// `INSERT 0 1`, `SELECT 5`); 0 for a tag without one (`BEGIN`).
pub(super) fn command_rows(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    if last.is_empty() {
        return 0;
    }
    last.iter()
        .try_fold(0u64, |n, &d| {
            d.is_ascii_digit()
                .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
                .flatten()
        })
        .unwrap_or(0)
}

/// The transaction status of a `ReadyForQuery`: `I`, `T` or `E`.
///
/// Errors: a body that is not one byte.
pub(super) fn ready_status(body: &[u8]) -> Result<u8, Error> {
    match body {
        [s] => Ok(*s),
        _ => Err(Error::Protocol(
            "protocol error: ReadyForQuery of invalid length".into(),
        )),
    }
}

/// The fields of an `ErrorResponse` or `NoticeResponse` body, as (field
/// type, value) in the order sent; stops at the terminating NUL or at a
/// malformed field.
pub(super) fn error_fields(body: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut r = Reader::new(body, "ErrorResponse");
    std::iter::from_fn(move || {
        let ty = *r.body.get(r.pos)?;
        if ty == 0 {
            return None;
        }
        r.pos += 1;
        r.cstr().ok().map(|v| (ty, v))
    })
}

/// The parameter type OIDs of a `ParameterDescription` body.
///
/// Errors: a body shorter than its count says.
pub(super) fn parameter_types(body: &[u8]) -> Result<Vec<u32>, Error> {
    let mut r = Reader::new(body, "ParameterDescription");
    let n = r.i16()?;
    (0..n).map(|_| r.i32().map(|oid| oid as u32)).collect()
}

/// The columns of a `RowDescription` body: name and type OID.
///
/// Errors: a body shorter than its count says.
pub(super) fn row_columns(body: &[u8]) -> Result<Vec<(String, u32)>, Error> {
    let mut r = Reader::new(body, "RowDescription");
    let n = r.i16()?;
    (0..n)
        .map(|_| {
            let name = String::from_utf8_lossy(r.cstr()?).into_owned();
            r.take(4 + 2)?; // table OID, column number
            let oid = r.i32()? as u32;
            r.take(2 + 4 + 2)?; // type size, type modifier, format
            Ok((name, oid))
        })
        .collect()
}

/// The process id of a `BackendKeyData` body.
///
/// Errors: a body too short.
pub(super) fn backend_pid(body: &[u8]) -> Result<i32, Error> {
    Reader::new(body, "BackendKeyData").i32()
}

/// A whole message (`frame`, header included) as `postgres-protocol`
/// reads it: for the authentication exchange, once per connection.
///
/// Errors: a message `postgres-protocol` cannot read.
pub(super) fn decode(frame: &[u8]) -> Result<Message, Error> {
    match Message::parse(&mut BytesMut::from(frame)) {
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(Error::Protocol("protocol error: incomplete message".into())),
        Err(e) => Err(super::protocol(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message as the server writes it.
    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_message_is_whole_only_when_all_its_bytes_are_there() {
        let m = msg(b'C', b"SELECT 1\0");
        for cut in 0..m.len() {
            // Before the length is known, the rest of the header is missing.
            let missing = if cut < HEADER {
                HEADER - cut
            } else {
                m.len() - cut
            };
            assert_eq!(front(&m[..cut]).unwrap(), Front::Short(missing));
        }
        let mut two = m.clone();
        two.extend(msg(b'Z', b"I"));
        assert_eq!(
            front(&two).unwrap(),
            Front::Whole(Frame {
                tag: b'C',
                start: 0,
                len: m.len()
            })
        );
        assert_eq!(
            &two[Frame {
                tag: b'C',
                start: 0,
                len: m.len()
            }
            .body()],
            b"SELECT 1\0"
        );
        assert!(front(&[b'Z', 0, 0, 0, 3]).is_err());
        assert!(front(&[b'Z', 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn command_tags_give_their_row_counts() {
        assert_eq!(command_rows(b"UPDATE 3\0"), 3);
        assert_eq!(command_rows(b"INSERT 0 1\0"), 1);
        assert_eq!(command_rows(b"SELECT 12\0"), 12);
        assert_eq!(command_rows(b"BEGIN\0"), 0);
        assert_eq!(command_rows(b"COMMIT\0"), 0);
        assert_eq!(command_rows(b"SELECT 1x\0"), 0);
        assert_eq!(command_rows(b"COPY 18446744073709551615\0"), u64::MAX);
        assert_eq!(command_rows(b"COPY 18446744073709551616\0"), 0);
    }

    #[test]
    fn data_row_values_and_nulls_are_ranges_of_the_body() {
        let mut body = 3i16.to_be_bytes().to_vec();
        body.extend(2i32.to_be_bytes());
        body.extend(b"ab");
        body.extend((-1i32).to_be_bytes());
        body.extend(0i32.to_be_bytes());
        let mut got = Vec::new();
        data_row(&body, |v| got.push(v.map(|r| body[r].to_vec()))).unwrap();
        assert_eq!(got, vec![Some(b"ab".to_vec()), None, Some(vec![])]);
        // A value longer than what is left is an error, not a panic.
        body.truncate(body.len() - 6);
        assert!(data_row(&body, |_| {}).is_err());
    }

    #[test]
    fn error_fields_are_read_up_to_the_terminator() {
        let body = b"SERROR\0VERROR\0C40001\0Mcould not serialize\0\0";
        let f: Vec<_> = error_fields(body).collect();
        assert_eq!(f.len(), 4);
        assert_eq!(f[2], (b'C', &b"40001"[..]));
        assert_eq!(f[3], (b'M', &b"could not serialize"[..]));
        // Cut inside a value: the fields before it, no panic.
        assert_eq!(error_fields(&body[..20]).count(), 2);
    }

    #[test]
    fn descriptions_give_names_and_type_oids() {
        let mut body = 2i16.to_be_bytes().to_vec();
        for (name, oid) in [(&b"aid"[..], 23u32), (b"abalance", 20)] {
            body.extend(name);
            body.push(0);
            body.extend([0; 6]);
            body.extend(oid.to_be_bytes());
            body.extend([0; 8]);
        }
        assert_eq!(
            row_columns(&body).unwrap(),
            vec![("aid".to_string(), 23), ("abalance".to_string(), 20)]
        );
        assert!(row_columns(&body[..body.len() - 1]).is_err());
        let mut params = 2i16.to_be_bytes().to_vec();
        params.extend(23u32.to_be_bytes());
        params.extend(25u32.to_be_bytes());
        assert_eq!(parameter_types(&params).unwrap(), vec![23, 25]);
        assert!(parameter_types(&params[..5]).is_err());
    }

    #[test]
    fn authentication_goes_through_postgres_protocol() {
        let ok = msg(b'R', &0i32.to_be_bytes());
        assert!(matches!(decode(&ok).unwrap(), Message::AuthenticationOk));
    }

    /// The read buffer holds whatever the socket delivered: a server out
    /// of step, a proxy's garbage or a cut message must give a protocol
    /// error (or a short read), never a panic or a read past the body.
    mod arbitrary_bytes {
        use super::*;
        use proptest::prelude::*;

        fn is_protocol(e: &Error) -> bool {
            matches!(e, Error::Protocol(m) if m.starts_with("protocol error: "))
        }

        /// A well-formed `DataRow` body of `values` (None: NULL).
        fn data_row_body(values: &[Option<Vec<u8>>]) -> Vec<u8> {
            let mut body = (values.len() as i16).to_be_bytes().to_vec();
            for v in values {
                match v {
                    None => body.extend((-1i32).to_be_bytes()),
                    Some(v) => {
                        body.extend((v.len() as i32).to_be_bytes());
                        body.extend(v);
                    }
                }
            }
            body
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn the_front_of_any_buffer_is_a_frame_within_it_a_short_count_or_an_error(
                buf in proptest::collection::vec(any::<u8>(), 0..64),
            ) {
                match front(&buf) {
                    Ok(Front::Whole(f)) => {
                        prop_assert!(f.len >= HEADER && f.len <= buf.len());
                        prop_assert_eq!(f.tag, buf[0]);
                        let body = f.body();
                        prop_assert!(body.start <= body.end && body.end <= buf.len());
                    }
                    Ok(Front::Short(n)) => prop_assert!(n > 0),
                    Err(e) => {
                        prop_assert!(is_protocol(&e), "{e:?}");
                        // Only a length below 4 is refused.
                        let len = i32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
                        prop_assert!(len < 4);
                    }
                }
            }

            #[test]
            fn any_body_reads_within_itself_or_fails_as_a_protocol_error(
                body in proptest::collection::vec(any::<u8>(), 0..96),
            ) {
                let mut ranges = Vec::new();
                match data_row(&body, |v| ranges.extend(v)) {
                    Ok(()) => {}
                    Err(e) => prop_assert!(is_protocol(&e), "{e:?}"),
                }
                for r in ranges {
                    prop_assert!(r.start <= r.end && r.end <= body.len());
                }
                let _ = command_rows(&body);
                match ready_status(&body) {
                    Ok(s) => prop_assert_eq!(body.len(), 1, "{}", s),
                    Err(e) => prop_assert!(is_protocol(&e)),
                }
                for (_, value) in error_fields(&body) {
                    prop_assert!(value.len() < body.len());
                }
                for result in [
                    parameter_types(&body).map(drop),
                    row_columns(&body).map(drop),
                    backend_pid(&body).map(drop),
                ] {
                    if let Err(e) = result {
                        prop_assert!(is_protocol(&e), "{e:?}");
                    }
                }
                let mut framed = vec![b'R'];
                framed.extend((body.len() as i32 + 4).to_be_bytes());
                framed.extend(&body);
                let _ = decode(&framed);
            }

            #[test]
            fn a_well_formed_data_row_reads_back_its_values_and_a_cut_one_fails(
                values in proptest::collection::vec(
                    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
                    0..6,
                ),
                cut in any::<prop::sample::Index>(),
            ) {
                let body = data_row_body(&values);
                let mut got = Vec::new();
                data_row(&body, |v| got.push(v.map(|r| body[r].to_vec()))).unwrap();
                prop_assert_eq!(&got, &values);
                if body.len() > 2 {
                    // Any cut after the count loses a byte some value needs.
                    let at = 2 + cut.index(body.len() - 2);
                    match data_row(&body[..at], |_| {}) {
                        Err(e) => prop_assert!(is_protocol(&e), "{e:?}"),
                        Ok(()) => prop_assert!(false, "a body cut at {at} of {} read whole", body.len()),
                    }
                }
            }
        }
    }
}
