//! Why an expression could not be evaluated. Each error displays as
//! pgbench's own message for it (`pgbench.c`: `coerceToInt`,
//! `evalStandardFunc`, `makeVariableValue`), so a script's failure reads
//! the same under isobench as under pgbench.

use super::super::prng;
use super::format_f;

/// A run-time error of pgbench's expression language.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// A variable no `\set`, `\gset` or `-D` gave a value.
    #[error("undefined variable \"{0}\"")]
    Undefined(String),
    /// A variable's text (`-D`, `\gset`) that is no pgbench value.
    #[error("malformed variable \"{name}\" value: \"{text}\"")]
    Malformed { name: String, text: String },
    /// A variable's text that is an integer beyond `bigint`.
    #[error("value \"{0}\" is out of range for type bigint")]
    TextOutOfRange(String),
    /// A value of a type the operation does not take (`from`, `to`:
    /// pgbench's type names, e.g. `boolean`, `int`).
    #[error("cannot coerce {from} to {to}")]
    Coerce {
        from: &'static str,
        to: &'static str,
    },
    /// A double that rounds outside `bigint` where an int is needed.
    #[error("double to int overflow for {}", format_f(*.0))]
    DoubleToInt(f64),
    /// Integer arithmetic past `bigint` (`op`: add, sub, mul, div).
    #[error("bigint {0} out of range")]
    Overflow(&'static str),
    /// Integer `/` or `%` by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// A call with more arguments than pgbench takes (16).
    #[error("too many function arguments, maximum is {}", super::MAX_ARGS)]
    TooManyArguments,
    /// `random*(min, max)` with `min > max`.
    #[error("empty range given to random")]
    EmptyRandomRange,
    /// `random*(min, max)` whose `max - min + 1` overflows.
    #[error("random range is too large")]
    RandomRangeTooLarge,
    /// `random_gaussian`'s parameter below its minimum (2.0).
    #[error(
        "gaussian parameter must be at least {:.6} (not {})",
        prng::MIN_GAUSSIAN_PARAM,
        format_f(*.0)
    )]
    GaussianParameter(f64),
    /// `random_zipfian`'s parameter outside [1.001, 1000].
    #[error(
        "zipfian parameter must be in range [{:.3}, {:.0}] (not {})",
        prng::MIN_ZIPFIAN_PARAM,
        prng::MAX_ZIPFIAN_PARAM,
        format_f(*.0)
    )]
    ZipfianParameter(f64),
    /// `random_exponential`'s parameter not above zero.
    #[error("exponential parameter must be greater than zero (not {})", format_f(*.0))]
    ExponentialParameter(f64),
    /// `permute(x, size)` with `size <= 0`.
    #[error("permute size parameter must be greater than zero")]
    PermuteSize,
}
