//! `payrecon orders add|import` (docs/api.md): the API's registration from the command line,
//! with the same validation (`domain::expected_order`) and idempotency
//! (`Store::register_orders`). An import streams its file and commits `REGISTER_BATCH` rows per
//! transaction; a bad row is named by its line and skipped, the good rows are kept.
//!
//! Exit codes: 0 every order registered (or registered before with the same fields); 1 a ref
//! registered with other fields, a bad row in an import, or the database failed; 2 an invalid
//! field of `add`, or an import file that cannot be read as the CSV it must be.

use super::Exit;
use std::io::Read;

use super::{CliError, Format, OrderAddArgs, OrdersAction, OrdersArgs, Outcome};
use crate::app::{db, Access};
use crate::config::Config;
use crate::domain::{
    amount_within, expected_order, Catalog, ExpectedOrder, FieldError, OrderInput,
};
use crate::store::{OrderView, Registered, Retries, Store, REGISTER_BATCH};

/// The import file's columns; `expires_at` and `reference` may be left out.
pub const COLUMNS: [&str; 7] = [
    "order_ref",
    "chain",
    "pay_to",
    "asset",
    "amount_due",
    "expires_at",
    "reference",
];

/// Runs `payrecon orders …`.
pub async fn command(config: Config, args: OrdersArgs) -> Outcome {
    match args.action {
        OrdersAction::Add(a) => add(&config, a).await,
        OrdersAction::Import { file } => {
            let reader: Box<dyn Read> = if file.as_os_str() == "-" {
                Box::new(std::io::stdin())
            } else {
                let f = std::fs::File::open(&file)
                    .map_err(|e| CliError::usage(format!("cannot read {}: {e}", file.display())))?;
                Box::new(f)
            };
            import(&config, reader).await
        }
    }
}

/// A line for each field error, named by its flag.
fn field_errors(errors: &[FieldError]) -> CliError {
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("--{}: {}", flag(e.field), e.detail))
        .collect();
    CliError::usage(lines.join("\n"))
}

async fn add(config: &Config, a: OrderAddArgs) -> Outcome {
    let input = OrderInput {
        order_ref: &a.order_ref,
        chain: &a.chain,
        pay_to: &a.pay_to,
        asset: &a.asset,
        amount_due: &a.amount,
        expires_at: a.expires_at.as_deref(),
        reference: a.reference.as_deref(),
    };
    let order = expected_order(&input, &config.catalog()).map_err(|e| field_errors(&e))?;
    let store = db::open(config, Access::Write).await?;
    if let Err(e) = amount_within(order.amount_due, store.max_amount()) {
        store.close().await;
        return Err(field_errors(&[e]));
    }
    let outcome = store
        .register_orders(std::slice::from_ref(&order), &Retries::default())
        .await;
    store.close().await;
    let (word, view, code) = match outcome {
        Ok(mut v) if !v.is_empty() => match v.remove(0) {
            Registered::Created(view) => ("registered", view, Exit::Done),
            Registered::Same(view) => ("already registered (same fields)", view, Exit::Done),
            Registered::Conflict(view, fields) => {
                return Err(CliError::failed(format!(
                    "order {:?} is registered with another {}; nothing was written",
                    view.order_ref,
                    fields.join(", ")
                )));
            }
        },
        Ok(_) => return Err(CliError::failed("the database returned no outcome")),
        Err(e) => return Err(e.into()),
    };
    match a.format {
        Format::Json => println!("{}", serde_json::to_string(&view).unwrap_or_default()),
        Format::Text => println!("{}", line(word, &view)),
    }
    Ok(code)
}

/// The flag of a field (`amount_due` is `--amount`, `order_ref` is `--ref`).
fn flag(field: &str) -> String {
    match field {
        "amount_due" => "amount".into(),
        "order_ref" => "ref".into(),
        f => f.replace('_', "-"),
    }
}

fn line(word: &str, o: &OrderView) -> String {
    format!(
        "{word}: {} ({} {} of {} to {}, {})",
        o.order_ref, o.chain, o.amount_due, o.asset, o.pay_to, o.state
    )
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    created: u64,
    same: u64,
    conflicts: u64,
    invalid: u64,
}

async fn import(config: &Config, reader: Box<dyn Read>) -> Outcome {
    // Lines end in LF or CRLF; CRLF is read as LF before the CSV reader, whose line numbers
    // fall one short after a CRLF header otherwise.
    let mut csv = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(NoCr::new(reader));
    let index = header(&mut csv)?;
    let store = db::open(config, Access::Write).await?;
    let catalog = config.catalog().with_max_amount(store.max_amount());
    let mut tally = Tally::default();
    let mut batch = Batch::default();
    let mut record = csv::StringRecord::new();
    let mut result = Ok(());
    loop {
        match csv.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                // A row the CSV reader cannot read (wrong number of cells, bad UTF-8): named,
                // skipped; the reader goes on with the next line.
                let at = e.position().map(|p| p.line()).unwrap_or(0);
                eprintln!("payrecon: line {at}: {}", one_line(&e.to_string()));
                tally.invalid += 1;
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                    result = Err(e.to_string());
                    break;
                }
                continue;
            }
        }
        let at = record.position().map(|p| p.line()).unwrap_or(0);
        match row(&record, &index, &catalog) {
            Ok(o) => {
                batch.lines.push(at);
                batch.orders.push(o);
            }
            Err(errors) => {
                tally.invalid += 1;
                for e in errors {
                    eprintln!("payrecon: line {at}: {}: {}", e.field, e.detail);
                }
            }
        }
        if batch.orders.len() == REGISTER_BATCH {
            if let Err(e) = register(&store, &mut batch, &mut tally).await {
                result = Err(e.to_string());
                break;
            }
        }
    }
    if result.is_ok() {
        result = register(&store, &mut batch, &mut tally)
            .await
            .map_err(|e| e.to_string());
    }
    store.close().await;
    println!(
        "{} registered, {} already registered, {} conflicting, {} invalid",
        tally.created, tally.same, tally.conflicts, tally.invalid
    );
    result.map_err(CliError::failed)?;
    Ok(Exit::of(tally.conflicts + tally.invalid == 0))
}

/// A reader in which CRLF is LF (a CR anywhere else is kept, and refused by the field's rules).
struct NoCr<R> {
    inner: std::io::BufReader<R>,
    /// A CR read, not yet known to end a line.
    cr: bool,
}

impl<R: Read> NoCr<R> {
    fn new(inner: R) -> NoCr<R> {
        NoCr {
            inner: std::io::BufReader::new(inner),
            cr: false,
        }
    }
}

impl<R: Read> Read for NoCr<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead as _;
        let mut out = 0;
        while out < buf.len() {
            let Some(&b) = self.inner.fill_buf()?.first() else {
                if std::mem::take(&mut self.cr) {
                    buf[out] = b'\r';
                    out += 1;
                }
                break;
            };
            if std::mem::take(&mut self.cr) && b != b'\n' {
                buf[out] = b'\r';
                out += 1;
                continue;
            }
            self.inner.consume(1);
            if b == b'\r' {
                self.cr = true;
            } else {
                buf[out] = b;
                out += 1;
            }
        }
        Ok(out)
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The position of each of `COLUMNS` in the header (`expires_at` and `reference` may be
/// missing); an unknown, repeated or missing column is an error.
fn header<R: Read>(csv: &mut csv::Reader<NoCr<R>>) -> Result<[Option<usize>; 7], CliError> {
    let h = csv
        .headers()
        .map_err(|e| CliError::usage(format!("line 1: {}", one_line(&e.to_string()))))?
        .clone();
    let mut index = [None; 7];
    for (i, name) in h.iter().enumerate() {
        let name = name.trim();
        let Some(c) = COLUMNS.iter().position(|c| *c == name) else {
            return Err(CliError::usage(format!(
                "line 1: unknown column {name:?} (the header is {})",
                COLUMNS.join(",")
            )));
        };
        if index[c].replace(i).is_some() {
            return Err(CliError::usage(format!(
                "line 1: column {name:?} appears twice"
            )));
        }
    }
    if let Some(c) = (0..5).find(|&c| index[c].is_none()) {
        return Err(CliError::usage(format!(
            "line 1: column {:?} is missing (the header is {})",
            COLUMNS[c],
            COLUMNS.join(",")
        )));
    }
    Ok(index)
}

fn row(
    record: &csv::StringRecord,
    index: &[Option<usize>; 7],
    catalog: &Catalog,
) -> Result<ExpectedOrder, Vec<FieldError>> {
    let cell = |c: usize| index[c].and_then(|i| record.get(i)).unwrap_or("");
    // `expires_at` as `--since` takes a time: RFC 3339, or a date (midnight UTC).
    let expires = Some(cell(5)).filter(|s| !s.is_empty()).map(|s| {
        match s.trim().parse::<jiff::civil::Date>() {
            Ok(d) => d
                .to_zoned(jiff::tz::TimeZone::UTC)
                .map(|z| z.timestamp().to_string())
                .unwrap_or_else(|_| s.to_string()),
            Err(_) => s.to_string(),
        }
    });
    let input = OrderInput {
        order_ref: cell(0),
        chain: cell(1),
        pay_to: cell(2),
        asset: cell(3),
        amount_due: cell(4),
        expires_at: expires.as_deref(),
        reference: Some(cell(6)).filter(|s| !s.is_empty()),
    };
    expected_order(&input, catalog)
}

/// Good rows waiting to be registered, and the line of each.
#[derive(Default)]
struct Batch {
    lines: Vec<u64>,
    orders: Vec<ExpectedOrder>,
}

/// Registers the batch (one transaction) and names each conflict by its line.
async fn register(
    store: &Store,
    batch: &mut Batch,
    tally: &mut Tally,
) -> Result<(), crate::store::StoreError> {
    if batch.orders.is_empty() {
        return Ok(());
    }
    let outcomes = store
        .register_orders(&batch.orders, &Retries::default())
        .await?;
    for (at, outcome) in batch.lines.iter().zip(outcomes) {
        match outcome {
            Registered::Created(_) => tally.created += 1,
            Registered::Same(_) => tally.same += 1,
            Registered::Conflict(view, fields) => {
                tally.conflicts += 1;
                eprintln!(
                    "payrecon: line {at}: order {:?} is registered with another {}",
                    view.order_ref,
                    fields.join(", ")
                );
            }
        }
    }
    batch.lines.clear();
    batch.orders.clear();
    Ok(())
}

#[cfg(test)]
mod tests;
