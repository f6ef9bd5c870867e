//! Script variables sent as typed parameters (`-M extended|prepared`):
//! the binary encodings of the types the server infers.

use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// A script variable sent as a parameter, encoded for the type the server
/// inferred. An integer value goes to an integer column without passing
/// through text; anything else is encoded from its text, as pgbench sends
/// every parameter as text for the server to read.
#[derive(Debug)]
pub(super) enum Param {
    Null,
    Int(i64),
    Text(String),
}

type BoxError = Box<dyn StdError + Sync + Send>;

impl ToSql for Param {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let s = match self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Int(i) => {
                let fits = match *ty {
                    Type::INT2 => i16::try_from(*i).map(|v| out.put_i16(v)).is_ok(),
                    Type::INT4 => i32::try_from(*i).map(|v| out.put_i32(v)).is_ok(),
                    Type::INT8 => {
                        out.put_i64(*i);
                        true
                    }
                    _ => false,
                };
                if fits {
                    return Ok(IsNull::No);
                }
                // Another type, or out of range (the text path words the
                // error).
                return Param::Text(i.to_string()).to_sql(ty, out);
            }
            Param::Text(s) => s,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(p: &Param, ty: &Type) -> Result<Vec<u8>, String> {
        let mut out = BytesMut::new();
        p.to_sql(ty, &mut out)
            .map(|_| out.to_vec())
            .map_err(|e| e.to_string())
    }

    /// The integer fast path sends the bytes and the errors the text path
    /// does, at and beyond every integer type's range.
    #[test]
    fn integers_encode_as_their_text_would() {
        let types = [
            Type::INT2,
            Type::INT4,
            Type::INT8,
            Type::OID,
            Type::FLOAT4,
            Type::FLOAT8,
            Type::NUMERIC,
            Type::TEXT,
            Type::BOOL,
        ];
        let values = [
            0,
            1,
            -1,
            i64::from(i16::MAX),
            i64::from(i16::MAX) + 1,
            i64::from(i16::MIN) - 1,
            i64::from(i32::MAX),
            i64::from(i32::MAX) + 1,
            i64::from(i32::MIN),
            i64::from(i32::MIN) - 1,
            i64::MAX,
            i64::MIN,
        ];
        for ty in &types {
            for v in values {
                assert_eq!(
                    encode(&Param::Int(v), ty),
                    encode(&Param::Text(v.to_string()), ty),
                    "{v} as {ty}"
                );
            }
        }
        assert_eq!(
            encode(&Param::Int(7), &Type::INT4).unwrap(),
            vec![0, 0, 0, 7]
        );
        assert!(
            encode(&Param::Int(1 << 40), &Type::INT4)
                .unwrap_err()
                .contains("is not an integer")
        );
        assert!(encode(&Param::Null, &Type::INT4).unwrap().is_empty());
    }
}
