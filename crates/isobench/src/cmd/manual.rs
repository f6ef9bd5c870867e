//! `isobench completions SHELL` and `isobench man`: generated from the
//! command's own clap definition, so they never disagree with it.

use std::path::PathBuf;

use super::Cli;

/// `isobench completions SHELL`: the completion script of every
/// subcommand and flag, for `shell`, written to `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut Cli::command(), "isobench", out);
}

/// `isobench man`: the top-level man page (roff) written to `out`.
///
/// Errors: writing to `out` failed.
pub fn man_page(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use clap::CommandFactory;
    clap_mangen::Man::new(Cli::command()).render(out)
}

/// `isobench man --dir DIR`: `isobench.1` and one page per subcommand
/// (`isobench-run.1`, ...) in DIR, created if missing; returns the files
/// written, sorted.
///
/// Errors: DIR cannot be created or a page cannot be written.
pub fn man_pages(dir: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    use clap::CommandFactory;
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(Cli::command(), dir)?;
    let mut written: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == "isobench.1" || n.starts_with("isobench-"))
        })
        .collect();
    written.sort();
    Ok(written)
}
