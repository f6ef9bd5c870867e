//! pgbench's built-in functions (`evalStandardFunc`) and its hash
//! functions.

use super::super::prng;
use super::{Env, EvalError, Func, Value};

/// Evaluates a function on evaluated, non-NULL arguments (except for
/// `IS` and `debug`).
pub(super) fn call(func: Func, v: &[Value], env: &mut dyn Env) -> Result<Value, EvalError> {
    use Func::*;
    let int = |i: usize| v[i].to_int();
    let dbl = |i: usize| v[i].to_double();
    Ok(match func {
        Add | Sub | Mul | Div | Eq | Ne | Le | Lt
            if matches!(v[0], Value::Double(_)) || matches!(v[1], Value::Double(_)) =>
        {
            let (l, r) = (dbl(0)?, dbl(1)?);
            match func {
                Add => Value::Double(l + r),
                Sub => Value::Double(l - r),
                Mul => Value::Double(l * r),
                Div => Value::Double(l / r),
                Eq => Value::Bool(l == r),
                Ne => Value::Bool(l != r),
                Le => Value::Bool(l <= r),
                _ => Value::Bool(l < r),
            }
        }
        Add | Sub | Mul | Div | Mod | Eq | Ne | Le | Lt => {
            let (l, r) = (int(0)?, int(1)?);
            match func {
                Add => Value::Int(l.checked_add(r).ok_or(EvalError::Overflow("add"))?),
                Sub => Value::Int(l.checked_sub(r).ok_or(EvalError::Overflow("sub"))?),
                Mul => Value::Int(l.checked_mul(r).ok_or(EvalError::Overflow("mul"))?),
                Eq => Value::Bool(l == r),
                Ne => Value::Bool(l != r),
                Le => Value::Bool(l <= r),
                Lt => Value::Bool(l < r),
                _ if r == 0 => return Err(EvalError::DivisionByZero),
                Div if r == -1 && l == i64::MIN => return Err(EvalError::Overflow("div")),
                Div => Value::Int(l.wrapping_div(r)),
                _ => Value::Int(l.wrapping_rem(r)),
            }
        }
        BitAnd => Value::Int(int(0)? & int(1)?),
        BitOr => Value::Int(int(0)? | int(1)?),
        BitXor => Value::Int(int(0)? ^ int(1)?),
        // x86-64 shifts by the count modulo 64, as pgbench's C does there.
        Shl => Value::Int(int(0)?.wrapping_shl(int(1)? as u32)),
        Shr => Value::Int(int(0)?.wrapping_shr(int(1)? as u32)),
        Not => Value::Bool(!v[0].to_bool()?),
        Pi => Value::Double(std::f64::consts::PI),
        Abs => match v[0] {
            Value::Int(i) => Value::Int(i.wrapping_abs()),
            other => Value::Double(other.to_double()?.abs()),
        },
        Debug => {
            env.debug(&v[0]);
            v[0]
        }
        Double => Value::Double(dbl(0)?),
        Sqrt => Value::Double(dbl(0)?.sqrt()),
        Ln => Value::Double(dbl(0)?.ln()),
        Exp => Value::Double(dbl(0)?.exp()),
        Int => Value::Int(int(0)?),
        Least | Greatest => {
            let least = func == Least;
            if v.iter().any(|x| matches!(x, Value::Double(_))) {
                let mut m = dbl(0)?;
                for i in 1..v.len() {
                    let x = dbl(i)?;
                    // C's Min/Max macros: keep m unless x compares past it.
                    if (least && x < m) || (!least && x > m) {
                        m = x;
                    }
                }
                Value::Double(m)
            } else {
                let mut m = int(0)?;
                for i in 1..v.len() {
                    let x = int(i)?;
                    m = if least { m.min(x) } else { m.max(x) };
                }
                Value::Int(m)
            }
        }
        Random | RandomGaussian | RandomExponential | RandomZipfian => {
            let (min, max) = (int(0)?, int(1)?);
            if min > max {
                return Err(EvalError::EmptyRandomRange);
            }
            if max
                .checked_sub(min)
                .and_then(|d| d.checked_add(1))
                .is_none()
            {
                return Err(EvalError::RandomRangeTooLarge);
            }
            let rng = env.rng();
            Value::Int(match func {
                Random => rng.random(min, max),
                _ => {
                    let p = dbl(2)?;
                    match func {
                        RandomGaussian => {
                            if p < prng::MIN_GAUSSIAN_PARAM {
                                return Err(EvalError::GaussianParameter(p));
                            }
                            rng.gaussian(min, max, p)
                        }
                        RandomZipfian => {
                            if !(prng::MIN_ZIPFIAN_PARAM..=prng::MAX_ZIPFIAN_PARAM).contains(&p) {
                                return Err(EvalError::ZipfianParameter(p));
                            }
                            rng.zipfian(min, max, p)
                        }
                        _ => {
                            if p.is_nan() || p <= 0.0 {
                                return Err(EvalError::ExponentialParameter(p));
                            }
                            rng.exponential(min, max, p)
                        }
                    }
                }
            })
        }
        Pow => Value::Double(dbl(0)?.powf(dbl(1)?)),
        Is => Value::Bool(match (v[0], v[1]) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            _ => false,
        }),
        HashMurmur2 => Value::Int(hash_murmur2(int(0)?, int(1)? as u64)),
        HashFnv1a => Value::Int(hash_fnv1a(int(0)?, int(1)? as u64)),
        Permute => {
            let (x, size, seed) = (int(0)?, int(1)?, int(2)?);
            if size <= 0 {
                return Err(EvalError::PermuteSize);
            }
            Value::Int(prng::permute(x, size, seed))
        }
    })
}

/// pgbench's `hash_fnv1a(val, seed)`: 64-bit FNV-1a over the 8 bytes of
/// `val`, least significant first, starting from the offset basis xor
/// `seed` (<http://www.isthe.com/chongo/tech/comp/fnv/>).
pub fn hash_fnv1a(val: i64, seed: u64) -> i64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    let mut h = OFFSET_BASIS ^ seed;
    for byte in val.to_le_bytes() {
        h = (h ^ u64::from(byte)).wrapping_mul(PRIME);
    }
    h as i64
}

/// pgbench's `hash_murmur2(val, seed)`: 64-bit MurmurHash2 (MurmurHash64A,
/// Austin Appleby) of the 8-byte value `val`.
pub fn hash_murmur2(val: i64, seed: u64) -> i64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ M.wrapping_mul(8);
    let mut k = (val as u64).wrapping_mul(M);
    k ^= k >> R;
    k = k.wrapping_mul(M);
    h ^= k;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h as i64
}
