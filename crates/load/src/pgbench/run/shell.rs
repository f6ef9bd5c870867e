//! `\shell` and `\setshell` (pgbench.c's `runShellCommand`): the words
//! joined into one command line (`:name` a variable's value, `::x` the
//! text `:x`), run by `/bin/sh -c`; `\setshell` keeps the integer the
//! command prints. The client waits for the command, as pgbench's does.

use super::{Var, Vars};

/// pgbench's `SHELL_COMMAND_SIZE`: the longest command line.
const MAX_COMMAND: usize = 256;

/// pgbench reads at most this much of `\setshell`'s output (`res[64]`).
const MAX_RESULT: usize = 63;

/// Runs `words` (for command `word`: `shell` or `setshell`); for
/// `\setshell`, returns the integer the command printed.
///
/// Errors: pgbench's messages (`shell: undefined variable ":x"`, `could
/// not launch shell command`, `could not read result of shell command`,
/// `shell command must return an integer (not "...")`).
pub(super) async fn run(
    word: &str,
    words: &[String],
    vars: &Vars,
    set: bool,
) -> Result<Option<i64>, String> {
    let mut line = String::new();
    for (i, w) in words.iter().enumerate() {
        let arg = if let Some(lit) = w.strip_prefix("::") {
            format!(":{lit}")
        } else if let Some(name) = w.strip_prefix(':') {
            match vars.get(name) {
                Some(v) => text(v),
                None => return Err(format!("{word}: undefined variable \"{w}\"")),
            }
        } else {
            w.clone()
        };
        if line.len() + arg.len() + usize::from(i > 0) >= MAX_COMMAND - 1 {
            return Err(format!("{word}: shell command is too long"));
        }
        if i > 0 {
            line.push(' ');
        }
        line.push_str(&arg);
    }
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(&line).kill_on_drop(true);
    if !set {
        let ok = cmd.status().await.map(|s| s.success()).unwrap_or(false);
        return if ok {
            Ok(None)
        } else {
            Err(format!("{word}: could not launch shell command"))
        };
    }
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .map_err(|_| format!("{word}: could not launch shell command"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // fgets: the first line (with its newline), at most 63 bytes.
    let mut res: String = match stdout.find('\n') {
        Some(n) => stdout[..=n].to_string(),
        None => stdout.to_string(),
    };
    if res.len() > MAX_RESULT {
        let mut cut = MAX_RESULT;
        while !res.is_char_boundary(cut) {
            cut -= 1;
        }
        res.truncate(cut);
    }
    if res.is_empty() {
        return Err(format!("{word}: could not read result of shell command"));
    }
    strtol(&res)
        .map(Some)
        .ok_or_else(|| format!("{word}: shell command must return an integer (not \"{res}\")"))
}

/// A variable's text, as pgbench substitutes it.
fn text(v: &Var) -> String {
    match v {
        Var::Text(t) => t.to_string(),
        Var::Value(v) => v.to_string(),
    }
}

/// C's `strtol(s, &end, 10)` with only blanks after the number allowed.
fn strtol(s: &str) -> Option<i64> {
    let t = s.trim_start();
    let sign = usize::from(t.starts_with(['+', '-']));
    let digits = t[sign..].chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || !t[sign + digits..].trim().is_empty() {
        return None;
    }
    // strtol saturates; pgbench then keeps the int's low bits. Values
    // beyond i64 are rare enough to refuse.
    t[..sign + digits].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read_as_strtol_reads_them() {
        assert_eq!(strtol("42\n"), Some(42));
        assert_eq!(strtol(" -7 \n"), Some(-7));
        assert_eq!(strtol("one"), None);
        assert_eq!(strtol("1.0\n"), None);
    }

    #[tokio::test]
    async fn shell_words_take_variables_and_setshell_an_integer() {
        let mut vars = Vars::default();
        vars.define("one", Var::Text("1".into()));
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            run("setshell", &w(&["echo", ":one"]), &vars, true).await,
            Ok(Some(1))
        );
        assert_eq!(
            run("setshell", &w(&["echo", "-n", "one"]), &vars, true).await,
            Err("setshell: shell command must return an integer (not \"one\")".into())
        );
        assert_eq!(
            run("shell", &w(&["echo", ":nope"]), &vars, false).await,
            Err("shell: undefined variable \":nope\"".into())
        );
        assert_eq!(
            run("shell", &w(&["exit", "3"]), &vars, false).await,
            Err("shell: could not launch shell command".into())
        );
        assert_eq!(
            run("shell", &w(&["true", "::x"]), &vars, false).await,
            Ok(None)
        );
    }
}
