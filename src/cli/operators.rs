//! `payrecon operators add|remove` (docs/reference.md, `operators`): the console's operators
//! file (`console.operators_file`), as argon2id hashes. The password is read without echo at a
//! terminal (twice), else one line of stdin; it is never printed or logged.

use super::Exit;
use std::io::{BufRead, IsTerminal};

use super::{CliError, OperatorsAction, OperatorsArgs, Outcome};
use crate::config::Config;
use crate::console::operators::{check_name, Operators};

const KEY: &str = "console.operators_file";

pub fn command(config: &Config, args: OperatorsArgs) -> Outcome {
    let path = &config.console.operators_file;
    let shown = path.display();
    let existing = match path.exists() {
        true => Operators::load(path, KEY).map_err(CliError::failed)?,
        false => Operators::default(),
    };
    let mut ops = existing;
    match args.action {
        OperatorsAction::Add { name } => {
            check_name(&name).map_err(CliError::usage)?;
            let password = read_password(&name)?;
            let new = !ops.names().any(|n| n == name);
            ops.set(&name, &password).map_err(CliError::usage)?;
            ops.save(path).map_err(CliError::failed)?;
            let did = if new { "added" } else { "given a new password" };
            eprintln!("payrecon: operator {name} {did} ({shown})");
        }
        OperatorsAction::Remove { name } => {
            if !ops.remove(&name) {
                return Err(CliError::usage(format!("no operator {name} in {shown}")));
            }
            ops.save(path).map_err(CliError::failed)?;
            eprintln!("payrecon: operator {name} removed ({shown})");
        }
    }
    Ok(Exit::Done)
}

/// The password: at a terminal, prompted twice without echo; else stdin's first line.
fn read_password(name: &str) -> Result<String, CliError> {
    let io = |e: std::io::Error| CliError::failed(format!("reading the password: {e}"));
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("Password for {name}: ")).map_err(io)?;
        let again = rpassword::prompt_password("Again: ").map_err(io)?;
        if first != again {
            return Err(CliError::usage("the two passwords differ"));
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map_err(io)?;
        line.trim_end_matches(['\n', '\r']).to_string()
    };
    if password.is_empty() {
        return Err(CliError::usage("the password is empty"));
    }
    Ok(password)
}
