#![forbid(unsafe_code)]
//! The payrecon command line: all of it is `payrecon::cli::main` (parse, log, run, print the
//! error once).

fn main() -> std::process::ExitCode {
    payrecon::cli::main()
}
