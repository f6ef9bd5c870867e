//! What glibc's `getopt_long` says of a command line pgbench cannot
//! parse, in its words (posix/getopt.c): clap finds the error, this says
//! it as pgbench's users have always read it (`pgbench: unrecognized
//! option '--bogus'`, `invalid option -- 'X'`, `option requires an
//! argument -- 'c'`, `option '--client' requires an argument`, `option
//! '--debug' doesn't allow an argument`, `option '--f' is ambiguous;
//! possibilities: '--file' '--fillfactor' ...`).
//!
//! The arguments are scanned as `getopt_long` scans them: options and
//! operands in any order (GNU permutes them), `--` ends the options, a
//! long option may be a unique prefix (an exact name wins), its value
//! after `=` or in the next word, short options grouped (`-nS`), a short
//! option's value in the rest of its word or the next.

use super::{Opt, Spec, specs};
use crate::cmd::pgbench::version::Pgbench;

/// pgbench's `long_options` table in its order (pgbench.c, `main`), which
/// is the order an ambiguity lists them in; isobench's own after them.
fn table_order(v: Pgbench) -> Vec<Opt> {
    use Opt::*;
    let mut o = vec![
        Builtin,
        Client,
        Connect,
        if v >= Pgbench::V18 { Dbname } else { Debug },
        Define,
        File,
        Fillfactor,
        Host,
        Initialize,
        InitSteps,
        Jobs,
        Log,
        LatencyLimit,
        NoVacuum,
        Port,
        Progress,
        Protocol,
        Quiet,
        ReportPerCommand,
        Rate,
        Scale,
        SelectOnly,
        SkipSomeUpdates,
        Time,
        Transactions,
        Username,
        VacuumAll,
        UnloggedTables,
        Tablespace,
        IndexTablespace,
        SamplingRate,
        AggregateInterval,
        ProgressTimestamp,
        LogPrefix,
        ForeignKeys,
        RandomSeed,
        ShowScript,
        Partitions,
        PartitionMethod,
        FailuresDetailed,
        MaxTries,
        VerboseErrors,
        ExitOnAbort,
    ];
    if v >= Pgbench::V18 {
        o.push(Debug);
    }
    // --help and --version are checked before getopt, yet taken here
    // anywhere; then isobench's.
    o.extend([Help, Version, Out, FreshCopy]);
    o
}

/// The first error `getopt_long` reports for `args` (the words after
/// `pgbench`) under pgbench `v`'s options, without the program name;
/// `None` when it reports none.
pub fn first_error(args: &[String], v: Pgbench) -> Option<String> {
    let all = specs(v);
    let order: Vec<&Spec> = table_order(v)
        .into_iter()
        .filter_map(|o| all.iter().find(|s| s.opt == o))
        .collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if a == "--" {
            return None;
        }
        if let Some(rest) = a.strip_prefix("--") {
            let (name, value) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (rest, None),
            };
            let found = match order.iter().find(|s| s.long == name) {
                Some(s) => *s,
                None => {
                    let matches: Vec<&&Spec> =
                        order.iter().filter(|s| s.long.starts_with(name)).collect();
                    match matches.as_slice() {
                        [] => return Some(format!("unrecognized option '--{rest}'")),
                        [one] => **one,
                        many => {
                            let list: Vec<String> =
                                many.iter().map(|s| format!(" '--{}'", s.long)).collect();
                            return Some(format!(
                                "option '--{rest}' is ambiguous; possibilities:{}",
                                list.concat()
                            ));
                        }
                    }
                }
            };
            match (found.value, value) {
                (None, Some(_)) => {
                    return Some(format!(
                        "option '--{}' doesn't allow an argument",
                        found.long
                    ));
                }
                (Some(_), None) if i >= args.len() => {
                    return Some(format!("option '--{}' requires an argument", found.long));
                }
                (Some(_), None) => i += 1,
                _ => {}
            }
        } else if let Some(shorts) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            for (k, c) in shorts.char_indices() {
                let Some(s) = all.iter().find(|s| s.short == Some(c)) else {
                    return Some(format!("invalid option -- '{c}'"));
                };
                if s.value.is_some() {
                    if k + c.len_utf8() == shorts.len() {
                        if i >= args.len() {
                            return Some(format!("option requires an argument -- '{c}'"));
                        }
                        i += 1;
                    }
                    break;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(args: &[&str]) -> Option<String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        first_error(&args, Pgbench::V15)
    }

    /// glibc's words, as pgbench 15 and 18 print them here.
    #[test]
    fn getopts_words() {
        assert_eq!(
            err(&["-c", "2", "--bogus"]).as_deref(),
            Some("unrecognized option '--bogus'")
        );
        assert_eq!(
            err(&["--bogus=3"]).as_deref(),
            Some("unrecognized option '--bogus=3'")
        );
        assert_eq!(err(&["-nX"]).as_deref(), Some("invalid option -- 'X'"));
        assert_eq!(
            err(&["db", "-c"]).as_deref(),
            Some("option requires an argument -- 'c'")
        );
        assert_eq!(
            err(&["--client"]).as_deref(),
            Some("option '--client' requires an argument")
        );
        assert_eq!(
            err(&["--debug=3"]).as_deref(),
            Some("option '--debug' doesn't allow an argument")
        );
        assert_eq!(
            err(&["--f", "x"]).as_deref(),
            Some(
                "option '--f' is ambiguous; possibilities: '--file' '--fillfactor' '--foreign-keys' '--failures-detailed' '--fresh-copy'"
            )
        );
        // A unique prefix, an exact name among longer ones, values taken.
        assert_eq!(err(&["--no-vac", "--log", "-c4", "-f", "-x"]), None);
        assert_eq!(err(&["--", "--bogus"]), None);
        // pgbench 18: -d takes the database, debug is --debug alone.
        let args: Vec<String> = vec!["-d".into()];
        assert_eq!(
            first_error(&args, Pgbench::V18).as_deref(),
            Some("option requires an argument -- 'd'")
        );
        assert_eq!(err(&["-d"]), None);
    }
}
