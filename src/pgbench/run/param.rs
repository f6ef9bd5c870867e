//! Script variables sent as typed parameters (`-M extended|prepared`):
//! the binary encodings of the types the server infers.

use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// A script variable sent as a parameter, encoded for the type the server
/// inferred; `None` is NULL.
#[derive(Debug)]
pub(super) struct Param(pub(super) Option<String>);

type BoxError = Box<dyn StdError + Sync + Send>;

impl ToSql for Param {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let Some(s) = &self.0 else {
            return Ok(IsNull::Yes);
        };
        let t = s.trim();
        let bad = |what: &str| -> BoxError { format!("'{s}' is not {what}").into() };
        match *ty {
            Type::INT2 => out.put_i16(t.parse().map_err(|_| bad("a smallint"))?),
            Type::INT4 => out.put_i32(t.parse().map_err(|_| bad("an integer"))?),
            Type::INT8 => out.put_i64(t.parse().map_err(|_| bad("a bigint"))?),
            Type::OID => out.put_u32(t.parse().map_err(|_| bad("an oid"))?),
            Type::FLOAT4 => out.put_f32(t.parse().map_err(|_| bad("a real"))?),
            Type::FLOAT8 => out.put_f64(t.parse().map_err(|_| bad("a double precision"))?),
            Type::BOOL => out.put_u8(match t.to_ascii_lowercase().as_str() {
                "t" | "true" | "y" | "yes" | "on" | "1" => 1,
                "f" | "false" | "n" | "no" | "off" | "0" => 0,
                _ => return Err(bad("a boolean")),
            }),
            Type::NUMERIC => encode_numeric(t, out).map_err(|_| bad("a number"))?,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                out.put_slice(s.as_bytes())
            }
            _ => {
                return Err(format!(
                    "a parameter of type {ty}: isobench sends script variables as int, float, numeric, \
                     bool, oid and text parameters; run the script with -M simple"
                )
                .into());
            }
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// PostgreSQL's binary `numeric` for a decimal like `-12.0340` (no
/// exponent): ndigits, weight, sign, dscale, then base-10000 digits
/// (src/backend/utils/adt/numeric.c, numeric_send).
pub(super) fn encode_numeric(t: &str, out: &mut BytesMut) -> Result<(), ()> {
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(());
    }
    let dscale = frac.len() as u16;
    // Pad the integer part on the left and the fraction on the right to
    // whole groups of 4 decimal digits.
    let int = int.trim_start_matches('0');
    let pad_left = (4 - int.len() % 4) % 4;
    let pad_right = (4 - frac.len() % 4) % 4;
    let all: String = "0".repeat(pad_left) + int + frac + &"0".repeat(pad_right);
    let mut groups: Vec<i16> = all
        .as_bytes()
        .chunks(4)
        .map(|c| {
            std::str::from_utf8(c)
                .expect("ascii")
                .parse()
                .expect("digits")
        })
        .collect();
    let mut weight = ((pad_left + int.len()) / 4) as i16 - 1;
    // Strip leading and trailing zero groups.
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    out.put_i16(groups.len() as i16);
    out.put_i16(weight);
    out.put_u16(if neg && !groups.is_empty() { 0x4000 } else { 0 });
    out.put_u16(dscale);
    for g in groups {
        out.put_i16(g);
    }
    Ok(())
}
