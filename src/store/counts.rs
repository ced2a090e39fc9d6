//! Rows per distinct value of one text column of the dataset, counted per dictionary
//! code where the pages are decoded, on every core: no row becomes a batch, and the
//! `ts` column is read only when `--since`/`--until` cut rows (`agents` without a filter).

use std::ops::ControlFlow;

use logscope_core::batch::NULL_CODE;
use rustc_hash::FxHashMap;

use super::checksum::Sums;
use super::pages::{self, Decoded};
use super::scan::{ScanMode, Scanned, polars_slice};
use super::slices::{self, Plan, Slice};
use super::{Dataset, StoreError};

/// Each distinct value (`None` = null) with its rows, in order of first appearance in
/// the dataset's row order: the order a reader of the rows would meet them in.
pub type Counted = Vec<(Option<String>, u64)>;

/// What [`value_counts`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ValueCounts {
    /// Each distinct value and its rows inside the period.
    pub values: Counted,
    /// What was read (`delivered` = the rows counted).
    pub scanned: Scanned,
}

/// Counts the rows of `ds` with `since <= ts < until` (ms, when given) per value of
/// the text column `column`.
pub fn value_counts(
    ds: &Dataset,
    column: &str,
    since: Option<i64>,
    until: Option<i64>,
) -> Result<ValueCounts, StoreError> {
    let Some(plan) = slices::plan(ds, since, until, slices::PartOrder::Manifest)? else {
        return Ok(ValueCounts::default());
    };
    let mode = ScanMode::from_env();
    let mut out = ValueCounts::default();
    let mut index: FxHashMap<Option<String>, usize> = FxHashMap::default();
    let plan = &plan;
    slices::in_order(
        ds,
        plan,
        |s| count_slice(plan, s, column, since, until, mode),
        |counted| {
            for (v, n) in counted {
                out.scanned.delivered += n;
                match index.get(&v) {
                    Some(&k) => out.values[k].1 += n,
                    None => {
                        index.insert(v.clone(), out.values.len());
                        out.values.push((v, n));
                    }
                }
            }
            ControlFlow::Continue(())
        },
    )?;
    out.scanned.rows = plan.rows;
    Ok(out)
}

/// One slice's counts, values in order of first appearance.
fn count_slice(
    plan: &Plan,
    s: &Slice,
    column: &str,
    since: Option<i64>,
    until: Option<i64>,
    mode: ScanMode,
) -> Result<Counted, StoreError> {
    let md = plan.footer(&s.path);
    if mode != ScanMode::Polars
        && let Some(md) = &md
        && let Some(r) = mode.settle(
            &s.path,
            from_pages(s, md, plan.sums(&s.path), column, (since, until)),
        )
    {
        return r;
    }
    let mut columns = vec![column.to_string()];
    if since.is_some() || until.is_some() {
        columns.push("ts".to_string());
    }
    let df = polars_slice(&s.path, md, &columns, s.offset, s.len)?;
    let err = |e: polars::prelude::PolarsError| StoreError::Parquet {
        path: s.path.clone(),
        detail: e.to_string(),
    };
    let values = df.column(column).and_then(|c| c.str()).map_err(err)?;
    let ts = match df.column("ts") {
        Ok(c) => Some(
            c.cast(&polars::prelude::DataType::Int64)
                .map_err(err)?
                .i64()
                .map_err(err)?
                .clone(),
        ),
        Err(_) => None,
    };
    let mut order: Counted = Vec::new();
    let mut index: FxHashMap<Option<&str>, usize> = FxHashMap::default();
    for (i, v) in values.iter().enumerate() {
        if let Some(ts) = &ts
            && !in_range(ts.get(i).unwrap_or(i64::MIN), since, until)
        {
            continue;
        }
        match index.get(&v) {
            Some(&k) => order[k].1 += 1,
            None => {
                index.insert(v, order.len());
                order.push((v.map(str::to_string), 1));
            }
        }
    }
    Ok(order)
}

fn in_range(t: i64, since: Option<i64>, until: Option<i64>) -> bool {
    since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u)
}

/// [`count_slice`] from the pages: the column's dictionary codes counted per row group.
fn from_pages(
    s: &Slice,
    md: &polars::prelude::FileMetadataRef,
    sums: Option<&Sums>,
    column: &str,
    (since, until): (Option<i64>, Option<i64>),
) -> Result<Counted, pages::PageError> {
    let f = std::fs::File::open(&s.path)
        .map_err(|e| pages::PageError::Damaged(format!("opening: {e}")))?;
    let cut = since.is_some() || until.is_some();
    let mut order: Counted = Vec::new();
    let mut index: FxHashMap<Option<String>, usize> = FxHashMap::default();
    let mut counts: Vec<u64> = Vec::new();
    let mut first: Vec<u32> = Vec::new();
    let mut start = 0usize;
    for (g, rg) in md.row_groups.iter().enumerate() {
        let n = rg.num_rows();
        let (lo, hi) = (s.offset.max(start), (s.offset + s.len).min(start + n));
        if lo < hi {
            let want = |name: &str| sums.and_then(|s| s.column(g, rg, name));
            let chunk = |name: &str| {
                rg.columns_under_root_iter(name)
                    .and_then(|mut it| it.next())
                    .ok_or_else(|| pages::PageError::Unsupported(format!("no {name} column")))
            };
            let Decoded::Text { values, codes } =
                pages::read_column(&f, chunk(column)?, n, want(column), false)?
            else {
                return Err(pages::PageError::Unsupported(format!(
                    "{column} is not text"
                )));
            };
            let ts = if cut {
                match pages::read_column(&f, chunk("ts")?, n, want("ts"), false)? {
                    Decoded::Int(v) => Some(v),
                    _ => return Err(pages::PageError::Unsupported("ts is not an integer".into())),
                }
            } else {
                None
            };
            // Slot `values.slots()` counts the nulls.
            let null = values.slots();
            counts.clear();
            counts.resize(null + 1, 0);
            first.clear();
            for (i, &code) in codes.iter().enumerate().take(hi - start).skip(lo - start) {
                if let Some(ts) = &ts
                    && !in_range(ts.get(i).unwrap_or(i64::MIN), since, until)
                {
                    continue;
                }
                let k = match code {
                    NULL_CODE => null,
                    k => k as usize,
                };
                let c = &mut counts[k];
                if *c == 0 {
                    first.push(k as u32);
                }
                *c += 1;
            }
            for &k in &first {
                let v = if k as usize == null {
                    None
                } else {
                    values.value(k).map(str::to_string)
                };
                let c = counts[k as usize];
                match index.get(&v) {
                    Some(&at) => order[at].1 += c,
                    None => {
                        index.insert(v.clone(), order.len());
                        order.push((v, c));
                    }
                }
            }
        }
        start += n;
    }
    Ok(order)
}
