//! One option's value read as pgbench 15 reads it (`option_parse_int`,
//! `atof`, `atoi`, `parseScriptWeight`, `findBuiltin`, `process_file`,
//! `checkInitSteps`, `set_random_seed`), and [`Bad`]: what pgbench prints
//! when it refuses one.

use std::fmt;

use crate::model::Isolation;
use crate::pgbench::script::{self, BUILTINS, Script, builtin_desc};

/// Why pgbench refuses a command line: the lines it prints on stderr
/// (`pgbench: error: ...`, then any `pgbench: detail:` line, lines of
/// the script at fault, and the `--help` hint) before it exits 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad(String);

impl Bad {
    pub(super) fn error(message: impl fmt::Display) -> Bad {
        // The first line carries the prefix; a script's line and caret
        // follow as they are.
        Bad(format!("pgbench: error: {message}\n"))
    }

    pub(super) fn detail(mut self, detail: &str) -> Bad {
        self.0.push_str(&format!("pgbench: detail: {detail}\n"));
        self
    }

    pub(super) fn hint(mut self) -> Bad {
        self.0
            .push_str("pgbench: hint: Try \"pgbench --help\" for more information.\n");
        self
    }

    pub(super) fn then(mut self, text: &str) -> Bad {
        self.0.push_str(text);
        self
    }

    /// What glibc's `getopt_long` said of the command line (without the
    /// program's name), and pgbench's hint.
    pub fn getopt(said: &str) -> Bad {
        Bad(format!("pgbench: {said}\n")).hint()
    }

    /// A clap error of the command line (an unknown option, a missing
    /// value): its first line, and the hint.
    pub fn usage(clap_error: &str) -> Bad {
        let first = clap_error
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        Bad(format!("pgbench: {first}\n")).hint()
    }
}

impl fmt::Display for Bad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The most parameters of a statement under `-M extended`/`prepared`
/// (`MAX_ARGS` less the statement).
const MAX_PARAMS: usize = 255;

/// pgbench's `option_parse_int`: an integer (blanks around it allowed)
/// from `min` to `max`.
pub(super) fn option_int(v: &str, name: &str, min: i64, max: i64) -> Result<i64, Bad> {
    let invalid = || Bad::error(format!("invalid value \"{v}\" for option {name}"));
    let out_of_range = || Bad::error(format!("{name} must be in range {min}..{max}"));
    let t = v.trim_start();
    let sign_len = usize::from(t.starts_with(['+', '-']));
    let digits = t[sign_len..]
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    let (number, rest) = t.split_at(sign_len + digits);
    if !rest.trim().is_empty() {
        return Err(invalid());
    }
    // strtol: no digits is 0 (then out of range); too many is out of range.
    let n = if digits == 0 {
        0
    } else {
        match number.parse::<i64>() {
            Ok(n) if n >= i64::from(i32::MIN) && n <= i64::from(i32::MAX) => n,
            _ => return Err(out_of_range()),
        }
    };
    if n < min || n > max {
        return Err(out_of_range());
    }
    Ok(n)
}

/// C's `atof`: the longest leading number (after blanks), else 0.
pub(super) fn atof(v: &str) -> f64 {
    let t = v.trim_start();
    (1..=t.len())
        .rev()
        .filter(|&n| t.is_char_boundary(n))
        .find_map(|n| t[..n].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// C's `atoi`: the leading integer (after blanks), else 0.
pub(super) fn atoi(v: &str) -> i64 {
    let t = v.trim_start();
    let sign_len = usize::from(t.starts_with(['+', '-']));
    let digits = t[sign_len..]
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    t[..sign_len + digits].parse::<i64>().unwrap_or(0)
}

/// A value read with `atof` that must be above zero (`-R`, `-L`).
pub(super) fn positive(v: &str, message: &str) -> Result<f64, Bad> {
    let x = atof(v);
    if x > 0.0 {
        Ok(x)
    } else {
        Err(Bad::error(format!("{message}: \"{v}\"")))
    }
}

/// pgbench's `parseScriptWeight`: `NAME[@W]`.
pub(super) fn script_weight(arg: &str) -> Result<(String, u32), Bad> {
    let Some(at) = arg.rfind('@') else {
        return Ok((arg.to_string(), 1));
    };
    let (name, sep) = arg.split_at(at);
    let w = &sep[1..];
    let digits = w.strip_prefix(['+', '-']).unwrap_or(w);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(Bad::error(format!("invalid weight specification: {sep}")));
    }
    match w.parse::<i64>() {
        Ok(n) if (0..=i64::from(i32::MAX)).contains(&n) => Ok((name.to_string(), n as u32)),
        Ok(n) => Err(Bad::error(format!(
            "weight specification out of range (0 .. {}): {n}",
            i32::MAX
        ))),
        Err(_) => Err(Bad::error(format!("invalid weight specification: {sep}"))),
    }
}

/// `-b list`'s text (pgbench's `listAvailableScripts`).
pub(super) fn builtin_list() -> String {
    let mut o = String::from("Available builtin scripts:\n");
    for (n, _) in BUILTINS.iter() {
        o.push_str(&format!("  {n:>13}: {}\n", builtin_desc(n)));
    }
    o.push('\n');
    o
}

/// pgbench's `findBuiltin`: the built-in script `name` is a prefix of.
pub(super) fn find_builtin(name: &str) -> Result<&'static str, Bad> {
    let found: Vec<&'static str> = BUILTINS
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| n.starts_with(name))
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(
            Bad::error(format!("no builtin script found for name \"{name}\""))
                .then(&builtin_list()),
        ),
        several => Err(Bad::error(format!(
            "ambiguous builtin name: {} builtin scripts found for prefix \"{name}\"",
            several.len()
        ))
        .then(&builtin_list())),
    }
}

/// pgbench's `process_file`: the script `file` (`-` for stdin), parsed.
/// The script read from stdin (`-f -`) is kept in this file for the run
/// (which reads its scripts by path), and removed after it.
pub fn stdin_script_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("isobench-pgbench-stdin-{}.sql", std::process::id()))
}

pub(super) fn read_script(file: &str, weight: u32) -> Result<Script, Bad> {
    let read = if file == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(file)
    };
    let text = read.map_err(|e| {
        let why = e
            .raw_os_error()
            .map(|n| nix::errno::Errno::from_raw(n).desc().to_string())
            .unwrap_or_else(|| e.to_string());
        Bad::error(format!("could not open file \"{file}\": {why}"))
    })?;
    let parsed = script::parse(file, &text, weight).map_err(|e| Bad::error(e.to_string()))?;
    if file == "-" {
        std::fs::write(stdin_script_path(), &text)
            .map_err(|e| Bad::error(format!("could not keep the script read from stdin: {e}")))?;
    }
    Ok(parsed)
}

/// `-M extended`/`prepared` send a statement's variables as parameters:
/// at most [`MAX_PARAMS`], counted per occurrence as pgbench counts them.
pub(super) fn check_params(s: &Script) -> Result<(), Bad> {
    for c in &s.commands {
        if let script::CommandKind::Sql { sql, .. } = &c.kind {
            let n = script::split_variables(sql)
                .into_iter()
                .filter(|p| matches!(p, script::Part::Var(_)))
                .count();
            if n > MAX_PARAMS {
                return Err(Bad::error(format!(
                    "statement has too many arguments (maximum is {MAX_PARAMS}): {sql}"
                )));
            }
        }
    }
    Ok(())
}

/// `-D NAME=VALUE` (pgbench: a name, `=`, a value, each non-empty).
pub(super) fn define(v: &str) -> Result<(String, String), Bad> {
    match v.split_once('=') {
        Some((k, val)) if !k.is_empty() && !val.is_empty() => {
            if !script::is_variable_name(k) {
                return Err(Bad::error(format!(
                    "option: invalid variable name: \"{k}\""
                )));
            }
            Ok((k.to_string(), val.to_string()))
        }
        _ => Err(Bad::error(format!("invalid variable definition: \"{v}\""))),
    }
}

/// pgbench's `checkInitSteps`.
pub(super) fn check_init_steps(steps: &str) -> Result<(), Bad> {
    if steps.is_empty() {
        return Err(Bad::error("no initialization steps specified"));
    }
    if let Some(c) = steps.chars().find(|c| !"dtgGvpf ".contains(*c)) {
        return Err(
            Bad::error(format!("unrecognized initialization step \"{c}\""))
                .detail("Allowed step characters are: \"dtgGvpf\"."),
        );
    }
    Ok(())
}

/// pgbench's `set_random_seed`: `time`, `rand` or an unsigned integer;
/// prints `setting random seed to N`, as pgbench does.
pub(super) fn random_seed(v: &str) -> Result<u64, Bad> {
    let seed = match v {
        "time" => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64),
        "rand" => rand::random::<u64>(),
        _ => v.trim_start().parse::<u64>().map_err(|_| {
            Bad::error(format!("unrecognized random seed option \"{v}\""))
                .detail("Expecting an unsigned integer, \"time\" or \"rand\".")
        })?,
    };
    eprintln!("pgbench: setting random seed to {seed}");
    Ok(seed)
}

/// `NAME=VALUE` settings, in order.
pub(super) type PgSettings = Vec<(String, String)>;

/// `-c default_transaction_isolation=X` (or `--default_transaction_isolation=X`,
/// `-cdefault-transaction-isolation=X`) and the other settings in PGOPTIONS.
pub(super) fn read_pgoptions(opts: &str) -> Result<(Option<Isolation>, PgSettings), Bad> {
    // libpq: words split at spaces, a backslash escapes the next character
    // (`repeatable\ read`).
    let mut owned: Vec<String> = vec![String::new()];
    let mut chars = opts.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => owned.last_mut().expect("one word").extend(chars.next()),
            c if c.is_whitespace() => owned.push(String::new()),
            c => owned.last_mut().expect("one word").push(c),
        }
    }
    let words: Vec<&str> = owned
        .iter()
        .map(String::as_str)
        .filter(|w| !w.is_empty())
        .collect();
    let mut settings = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let kv = if w == "-c" {
            i += 1;
            words.get(i).copied()
        } else if let Some(rest) = w.strip_prefix("-c") {
            Some(rest)
        } else {
            w.strip_prefix("--")
        };
        if let Some((k, v)) = kv.and_then(|kv| kv.split_once('=')) {
            settings.push((k.replace('-', "_"), v.trim_matches('\'').to_string()));
        }
        i += 1;
    }
    let mut isolation = None;
    settings.retain(|(k, v)| {
        if k == "default_transaction_isolation" {
            isolation = Some(v.clone());
            false
        } else {
            true
        }
    });
    let isolation = isolation
        .map(|v| {
            v.parse::<Isolation>()
                .map_err(|e| Bad::error(format!("PGOPTIONS default_transaction_isolation: {e}")))
        })
        .transpose()?;
    Ok((isolation, settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_option_parse_int_and_atof_read_them() {
        assert_eq!(option_int(" 12 ", "-c", 1, 100).unwrap(), 12);
        assert_eq!(option_int("+7", "-c", 1, 100).unwrap(), 7);
        assert!(
            option_int("", "-c", 1, 100)
                .unwrap_err()
                .0
                .contains("must be in range")
        );
        assert!(
            option_int("99999999999", "-c", 1, 100)
                .unwrap_err()
                .0
                .contains("must be in range")
        );
        assert!(
            option_int("1x", "-c", 1, 100)
                .unwrap_err()
                .0
                .contains("invalid value")
        );
        assert_eq!(atof("2.5ms"), 2.5);
        assert_eq!(atof("x"), 0.0);
        assert_eq!(atoi(" -3x"), -3);
    }
}
