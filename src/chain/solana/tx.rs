//! One Solana transaction (`getTransaction`, `jsonParsed`) into the payments it makes
//! (docs/configuration.md, "Solana"): SOL by the System program's
//! `transfer`/`transferWithSeed`, SPL tokens by the Token and Token-2022 programs'
//! `transfer`/`transferChecked` (and Token-2022's `transferCheckedWithFee`, which credits the
//! amount less its fee), at top level or inner, each at its instruction index (`outer × 65536 +
//! inner + 1`). A token transfer names token accounts: its recipient is the account's owner and
//! its mint the account's, read from the transaction's token balances (a plain `transfer` names
//! neither). Every credited amount must show in the recipient account's balance change; one
//! that does not is left out, saying why (except a Token-2022 transfer whose mint withholds a
//! fee: what its account received). Amounts are integers from the node's strings and numbers,
//! never `uiAmount`.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::domain::{instruction_index, U256};

const SYSTEM: &str = "11111111111111111111111111111111";
const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const TOKEN_2022: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PazCLBjd6L8S8u";

/// The parts of a `getTransaction` answer payrecon reads.
#[derive(Debug, Deserialize)]
pub(in crate::chain) struct Tx {
    #[serde(rename = "blockTime")]
    pub block_time: Option<i64>,
    pub meta: Option<Meta>,
    pub transaction: Body,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::chain) struct Meta {
    pub err: Option<Value>,
    #[serde(default)]
    fee: u64,
    #[serde(default)]
    pre_balances: Vec<u64>,
    #[serde(default)]
    post_balances: Vec<u64>,
    #[serde(default)]
    pre_token_balances: Option<Vec<TokenBalance>>,
    #[serde(default)]
    post_token_balances: Option<Vec<TokenBalance>>,
    #[serde(default)]
    inner_instructions: Option<Vec<Inner>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenBalance {
    account_index: usize,
    mint: String,
    owner: Option<String>,
    ui_token_amount: TokenAmount,
}

#[derive(Debug, Deserialize)]
struct TokenAmount {
    amount: String,
}

#[derive(Debug, Deserialize)]
struct Inner {
    index: u16,
    instructions: Vec<Instruction>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instruction {
    #[serde(default)]
    program_id: String,
    /// `{type, info}` for the programs the node parses; a string (memo) or absent otherwise.
    #[serde(default)]
    parsed: Value,
}

#[derive(Debug, Deserialize)]
pub(in crate::chain) struct Body {
    #[serde(default)]
    signatures: Vec<String>,
    message: Message,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message {
    account_keys: Vec<Key>,
    instructions: Vec<Instruction>,
}

#[derive(Debug, Deserialize)]
struct Key {
    pubkey: String,
}

/// One payment a transaction makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::chain) struct Payment {
    /// `outer × 65536 + inner + 1`.
    pub index: i64,
    /// The wallet paid: the System transfer's destination, or the token account's owner.
    pub wallet: String,
    /// `None` for SOL, else the token's mint.
    pub mint: Option<String>,
    pub amount: U256,
}

/// The payments of `tx` and, for each transfer left out, why.
#[derive(Debug, Default)]
pub(in crate::chain) struct Parsed {
    pub payments: Vec<Payment>,
    pub refused: Vec<String>,
}

/// A transfer as parsed, before its account is checked.
struct Raw {
    index: i64,
    source: String,
    dest: String,
    mint: Option<String>,
    amount: U256,
    /// A Token-2022 transfer: its mint may withhold a transfer fee in the recipient account
    /// even when the instruction does not name it (`transferChecked` on a fee-bearing mint).
    fee_mint: bool,
}

impl Tx {
    /// Whether the transaction failed (`meta.err`): it pays nothing.
    pub fn failed(&self) -> bool {
        self.meta.as_ref().is_some_and(|m| m.err.is_some())
    }

    /// The transaction's first signature: its name, and a payment key's `tx_hash`.
    pub fn first_signature(&self) -> Option<&str> {
        self.transaction.signatures.first().map(String::as_str)
    }

    /// The block time when it is plausible: surfpool 1.2.0 writes seconds ÷ 1000 here
    /// (docs/research/surfpool.md), which would read as 1970.
    pub fn time(&self) -> Option<jiff::Timestamp> {
        plausible_time(self.block_time)
    }

    pub fn payments(&self) -> Parsed {
        let Some(meta) = &self.meta else {
            return Parsed::default();
        };
        let raws = self.raws(meta);
        self.checked(meta, raws)
    }

    /// Every transfer instruction, top-level and inner, by instruction index.
    fn raws(&self, meta: &Meta) -> Vec<Raw> {
        let mut raws = Vec::new();
        for (outer, ix) in self.transaction.message.instructions.iter().enumerate() {
            let outer = u16::try_from(outer).unwrap_or(u16::MAX);
            raws.extend(raw(ix, instruction_index(outer, None), meta, self));
        }
        for group in meta.inner_instructions.iter().flatten() {
            for (inner, ix) in group.instructions.iter().enumerate() {
                let inner = u16::try_from(inner).unwrap_or(u16::MAX);
                raws.extend(raw(
                    ix,
                    instruction_index(group.index, Some(inner)),
                    meta,
                    self,
                ));
            }
        }
        raws.sort_by_key(|r| r.index);
        raws
    }

    fn index_of(&self, key: &str) -> Option<usize> {
        self.transaction
            .message
            .account_keys
            .iter()
            .position(|k| k.pubkey == key)
    }

    /// The transfers whose recipient account's balance shows them, attributed to wallets.
    fn checked(&self, meta: &Meta, raws: Vec<Raw>) -> Parsed {
        // By account and asset: lamports moved into a token account (its rent) are not tokens.
        let mut credited: HashMap<(&str, Option<&str>), U256> = HashMap::new();
        let mut debited: HashMap<(&str, Option<&str>), U256> = HashMap::new();
        for r in &raws {
            *credited.entry((&r.dest, r.mint.as_deref())).or_default() += r.amount;
            *debited.entry((&r.source, r.mint.as_deref())).or_default() += r.amount;
        }
        let mut out = Parsed::default();
        for r in &raws {
            if self.to_itself(meta, r) {
                continue; // money moved within one wallet pays nothing
            }
            let Some(i) = self.index_of(&r.dest) else {
                out.refused.push(format!(
                    "transfer to {}: not among the transaction's accounts",
                    r.dest
                ));
                continue;
            };
            let (pre, post) = match &r.mint {
                None => (
                    balance(&meta.pre_balances, i, meta, i == 0),
                    meta.post_balances.get(i).map(|v| U256::from(*v)),
                ),
                // A token account the transaction created has no balance before it.
                Some(_) => (
                    token_amount(meta.pre_token_balances.as_deref(), i).or(Some(U256::ZERO)),
                    token_amount(meta.post_token_balances.as_deref(), i),
                ),
            };
            let slot = (r.dest.as_str(), r.mint.as_deref());
            let out_of = debited.get(&slot).copied().unwrap_or_default();
            let into = credited.get(&slot).copied().unwrap_or_default();
            // What arrived must show: post − pre + what the account sent ≥ what it was sent.
            let shows =
                matches!((pre, post), (Some(pre), Some(post)) if post + out_of >= pre + into);
            let mut amount = r.amount;
            if let (false, Some(got)) = (shows, withheld(r, pre, post, out_of, into)) {
                amount = got;
            } else if !shows {
                out.refused.push(format!(
                    "the transfer of {} to {} does not show in its balance ({} → {})",
                    r.amount,
                    r.dest,
                    pre.map_or("?".into(), |v| v.to_string()),
                    post.map_or("?".into(), |v| v.to_string())
                ));
                continue;
            }
            let wallet = match &r.mint {
                None => Some(r.dest.clone()),
                Some(_) => token_owner(meta, i),
            };
            let Some(wallet) = wallet else {
                out.refused.push(format!(
                    "token account {}: no owner in the transaction",
                    r.dest
                ));
                continue;
            };
            out.payments.push(Payment {
                index: r.index,
                wallet,
                mint: r.mint.clone(),
                amount,
            });
        }
        out
    }
}

impl Tx {
    /// A transfer between two accounts of one wallet (or an account to itself).
    fn to_itself(&self, meta: &Meta, r: &Raw) -> bool {
        if r.source == r.dest {
            return true;
        }
        let owner = |a: &str| self.index_of(a).and_then(|i| token_owner(meta, i));
        r.mint.is_some() && owner(&r.source).is_some_and(|o| Some(o) == owner(&r.dest))
    }
}

/// What a Token-2022 transfer's account received when its mint withheld a fee the
/// instruction did not name: the account's whole increase, when this was the only transfer into
/// it and the increase is short of the amount but not nothing.
fn withheld(
    r: &Raw,
    pre: Option<U256>,
    post: Option<U256>,
    out_of: U256,
    into: U256,
) -> Option<U256> {
    let got = (post? + out_of).checked_sub(pre?)?;
    (r.fee_mint && into == r.amount && !got.is_zero() && got < r.amount).then_some(got)
}

/// A native balance before the transaction, less the fee when the account paid it (key 0).
fn balance(v: &[u64], i: usize, meta: &Meta, payer: bool) -> Option<U256> {
    let b = U256::from(*v.get(i)?);
    Some(if payer {
        b.saturating_sub(U256::from(meta.fee))
    } else {
        b
    })
}

fn token_entry(list: Option<&[TokenBalance]>, i: usize) -> Option<&TokenBalance> {
    list?.iter().find(|b| b.account_index == i)
}

fn token_amount(list: Option<&[TokenBalance]>, i: usize) -> Option<U256> {
    token_entry(list, i).and_then(|b| b.ui_token_amount.amount.parse().ok())
}

fn token_owner(meta: &Meta, i: usize) -> Option<String> {
    token_entry(meta.post_token_balances.as_deref(), i)
        .or_else(|| token_entry(meta.pre_token_balances.as_deref(), i))
        .and_then(|b| b.owner.clone())
}

fn token_mint(meta: &Meta, i: usize) -> Option<String> {
    token_entry(meta.post_token_balances.as_deref(), i)
        .or_else(|| token_entry(meta.pre_token_balances.as_deref(), i))
        .map(|b| b.mint.clone())
}

/// An instruction's transfer, when it is one.
fn raw(ix: &Instruction, index: i64, meta: &Meta, tx: &Tx) -> Option<Raw> {
    let kind = ix.parsed.get("type")?.as_str()?;
    let info = ix.parsed.get("info")?;
    let text = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_string);
    match ix.program_id.as_str() {
        SYSTEM if matches!(kind, "transfer" | "transferWithSeed") => Some(Raw {
            index,
            source: text("source")?,
            dest: text("destination")?,
            mint: None,
            amount: U256::from(info.get("lamports")?.as_u64()?),
            fee_mint: false,
        }),
        TOKEN | TOKEN_2022 if matches!(kind, "transfer" | "transferChecked") => {
            token_raw(info, index, None, ix.program_id == TOKEN_2022, meta, tx)
        }
        // The recipient's account is credited the amount less the fee it withholds.
        TOKEN_2022 if kind == "transferCheckedWithFee" => {
            let fee = units(info.get("feeAmount")?.get("amount")?)?;
            token_raw(info, index, Some(fee), true, meta, tx)
        }
        _ => None,
    }
}

/// A token transfer's parts; `fee` is subtracted from its amount.
fn token_raw(
    info: &Value,
    index: i64,
    fee: Option<U256>,
    fee_mint: bool,
    meta: &Meta,
    tx: &Tx,
) -> Option<Raw> {
    let text = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_string);
    let dest = text("destination")?;
    let gross = units(
        info.get("amount")
            .or_else(|| info.get("tokenAmount")?.get("amount"))?,
    )?;
    let amount = gross.checked_sub(fee.unwrap_or_default())?;
    let mint = text("mint").or_else(|| token_mint(meta, tx.index_of(&dest)?))?;
    Some(Raw {
        index,
        source: text("source")?,
        dest,
        mint: Some(mint),
        amount,
        fee_mint,
    })
}

/// Base units from the node's decimal string.
fn units(v: &Value) -> Option<U256> {
    v.as_str()?.parse().ok()
}

/// A block time in seconds, when it reads as after 2001 (surfpool 1.2.0 divides by 1000).
pub(in crate::chain) fn plausible_time(t: Option<i64>) -> Option<jiff::Timestamp> {
    t.filter(|s| *s >= 1_000_000_000)
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
}

mod moves;
pub use moves::Moves;

#[cfg(test)]
mod tests;
