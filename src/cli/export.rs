//! `payrecon export` (README.md, "Exceptions and the export for finance"): the credited
//! payments of a window for finance, one row each, as CSV (RFC 4180: a header line, CRLF line
//! ends, fields quoted where they need it) or JSON lines. Read-only and streamed: each row goes
//! from the database cursor through a buffered writer, so memory stays flat however many
//! payments there are. Amounts are exact: base units as integers, and `amount_decimal` with the
//! asset's `[assets]` decimals.

use super::Exit;
use std::io::Write;

use jiff::Timestamp;

use super::{CliError, ExportArgs, ExportFormat, Outcome};
use crate::app::{db, Access};
use crate::config::Config;
use crate::store::{ExportRow, Store};

/// The columns, in order (the CSV header and the JSON keys).
pub const COLUMNS: [&str; 18] = [
    "order_ref",
    "chain",
    "asset",
    "symbol",
    "amount",
    "amount_decimal",
    "tx_hash",
    "log_index",
    "block_number",
    "block_time",
    "state",
    "credited_at",
    "source",
    "provider",
    "order_state",
    "amount_due",
    "amount_paid",
    "exception",
];

pub use crate::assets::{decimal, Assets};

/// One row's fields, in `COLUMNS` order, as text (empty for none).
fn fields(r: &ExportRow, assets: &Assets) -> [String; 18] {
    let (symbol, amount_decimal) = match assets.get(&r.chain, &r.asset) {
        Some((sym, d)) => (sym.clone(), decimal(&r.amount, *d).unwrap_or_default()),
        None => (String::new(), String::new()),
    };
    let ts = |t: Option<Timestamp>| t.map(crate::store::rfc3339_ms).unwrap_or_default();
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    [
        r.order_ref.clone(),
        r.chain.clone(),
        r.asset.clone(),
        symbol,
        r.amount.clone(),
        amount_decimal,
        r.tx_hash.clone(),
        r.log_index.to_string(),
        r.block_number.map(|n| n.to_string()).unwrap_or_default(),
        ts(r.block_time),
        r.state.clone(),
        ts(r.credited_at),
        r.source.clone(),
        opt(&r.provider),
        r.order_state.clone(),
        r.amount_due.clone(),
        opt(&r.amount_paid),
        opt(&r.exception),
    ]
}

/// Where the rows go, in the chosen format.
enum Sink<W: Write> {
    Csv(Box<csv::Writer<W>>),
    Json(W),
}

impl<W: Write> Sink<W> {
    fn new(w: W, format: ExportFormat) -> std::io::Result<Sink<W>> {
        Ok(match format {
            ExportFormat::Csv => {
                let mut c = csv::WriterBuilder::new()
                    .terminator(csv::Terminator::CRLF)
                    .from_writer(w);
                c.write_record(COLUMNS)?;
                Sink::Csv(Box::new(c))
            }
            ExportFormat::Json => Sink::Json(w),
        })
    }

    fn row(&mut self, f: [String; 18]) -> std::io::Result<()> {
        match self {
            Sink::Csv(c) => c.write_record(&f).map_err(std::io::Error::other),
            Sink::Json(w) => {
                let mut obj = serde_json::Map::new();
                for (k, v) in COLUMNS.iter().zip(f) {
                    let v = if v.is_empty() && !matches!(*k, "order_ref" | "amount") {
                        serde_json::Value::Null
                    } else {
                        serde_json::Value::String(v)
                    };
                    obj.insert((*k).to_string(), v);
                }
                serde_json::to_writer(&mut *w, &obj)?;
                w.write_all(b"\n")
            }
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Csv(mut c) => c.flush(),
            Sink::Json(mut w) => w.flush(),
        }
    }
}

/// Writes the window's payments to `out`; returns how many.
pub async fn write_export<W: Write>(
    store: &Store,
    assets: &Assets,
    since: Timestamp,
    until: Timestamp,
    format: ExportFormat,
    out: W,
) -> Result<u64, CliError> {
    let written = |e: std::io::Error| CliError::failed(format!("write the export: {e}"));
    let mut sink = Sink::new(out, format).map_err(written)?;
    let n = store
        .export_payments(since, until, |r| sink.row(fields(&r, assets)))
        .await?;
    sink.finish().map_err(written)?;
    Ok(n)
}

/// Runs `payrecon export`.
pub async fn command(config: Config, args: ExportArgs) -> Outcome {
    let now = Timestamp::now();
    let (since, until) = super::window(
        args.since.as_deref(),
        args.until.as_deref(),
        Timestamp::UNIX_EPOCH,
        now,
    )?;
    // The output first: a folder that cannot be written fails before anything is read. The
    // export goes to a temporary file beside the target, renamed over it once complete: a
    // failed export leaves the target as it was, and no temporary file.
    let mut temp: Option<tempfile::TempPath> = None;
    let out: Box<dyn Write> = match &args.output {
        Some(path) => {
            let folder = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => std::path::Path::new("."),
            };
            let made = tempfile::Builder::new()
                .prefix(".payrecon-export-")
                .tempfile_in(folder);
            match made {
                Ok(f) => {
                    let (file, path) = f.into_parts();
                    temp = Some(path);
                    Box::new(std::io::BufWriter::with_capacity(1 << 16, file))
                }
                Err(e) => {
                    return Err(CliError::failed(format!(
                        "cannot write {}: {e}",
                        path.display()
                    )))
                }
            }
        }
        None => Box::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout().lock(),
        )),
    };
    // (On an error below, `temp` is dropped: the temporary file is removed.)
    let store = db::open(&config, Access::Read).await?;
    // An unmigrated database says what to do, not which table is missing.
    match store
        .existing_tables(&["payrecon_payments".to_string()])
        .await
    {
        Ok(t) if t.is_empty() => {
            store.close().await;
            return Err(CliError::failed(
                "the database has no payrecon tables: run `payrecon migrate` first",
            ));
        }
        Ok(_) => {}
        Err(e) => {
            store.close().await;
            return Err(e.into());
        }
    }
    let assets = Assets::of(&config);
    let done = write_export(&store, &assets, since, until, args.format, out).await;
    store.close().await;
    let n = done?;
    if let (Some(temp), Some(path)) = (temp, &args.output) {
        temp.persist(path).map_err(|e| {
            CliError::failed(format!("cannot write {}: {}", path.display(), e.error))
        })?;
    }
    tracing::info!(payments = n, "Export written.");
    Ok(Exit::Done)
}

#[cfg(test)]
mod tests;
