//! The store of a replay's selected rows ([`RowStore`]) and what it is given.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

use crossbeam_channel::{bounded, unbounded};
use rustc_hash::FxHashMap;

use super::clients::{self, ClientLog};
use super::fed::Fed;
use super::merge::{CHUNK_ROWS, CHUNK_TEXT, Chunk, current, merge};
use super::needs::Needs;
use super::row::{
    ANONYMOUS, COOKIE, COOKIE_KNOWN, FIELD_IDS, HEAVY, IDENTIFIED, IDS, LOG_ORDER, LOGGED_REFUSAL,
    NO_VALUE, NONE, Row, RowMeta, SECOND, Tables, decision_order,
};
use super::run_buf::RunBuf;
use super::spill::{Run, RunReader};
use super::text::Interned;
use super::who::Who;
use super::writer::{RunThread, Written};
use crate::batch::Batch;
use crate::classify::{ClientKey, Identity, RowClass};
use crate::replay::request::Request;

/// Everything one row contributes, as the CLI classified it.
#[derive(Clone, Copy, Debug)]
pub struct RowInput<'a> {
    /// The batch.
    pub batch: &'a Batch,
    /// Row index in the batch.
    pub i: usize,
    /// The classification.
    pub class: &'a RowClass,
    /// The class for the report.
    pub who: Who,
    /// Status shows a deployed limiter refused it.
    pub logged_refusal: bool,
}

/// When a [`RowStore`] writes a sorted run of rows to disk, and where.
#[derive(Clone, Debug)]
pub struct SpillOptions {
    /// Rows held in memory: at this many, they are sorted and written out as a run.
    pub run_rows: usize,
    /// Bytes of free text (paths, queries, referers a candidate reads) held in memory
    /// before the rows are written out.
    pub run_text_bytes: usize,
    /// Runs on disk at most: at this many, they are merged into one.
    pub max_runs: usize,
    /// Directory of the temporary files (default: [`std::env::temp_dir`]).
    pub dir: Option<PathBuf>,
}

impl Default for SpillOptions {
    /// 512 Ki rows (about 55 MB with their text ids), 32 MiB of text, 256 runs: two
    /// runs are in memory while one is written out ([`RowStore::push`]).
    fn default() -> Self {
        SpillOptions {
            run_rows: 1 << 19,
            run_text_bytes: 32 << 20,
            max_runs: 256,
            dir: None,
        }
    }
}

/// Rows stamped in whole seconds still to be spread over their second: a run of
/// consecutive rows of one file with the same second, from `start` in the rows held.
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    file: u32,
    arrival: i64,
}

/// The selected rows, compact, put in decision-time order ([`RowStore::sort`]) in
/// bounded memory.
///
/// Rows are held until [`SpillOptions::run_rows`] of them (or
/// [`SpillOptions::run_text_bytes`] of their text); then they are handed to a writer
/// thread that sorts them and writes them to a temporary file as a run while the next
/// run is gathered (two runs in memory at most). [`RowStore::for_each_sorted`] merges
/// the runs (and the rows still held) on a reader thread, in exactly the order one sort
/// of every row gives: decision time, then input order. Memory grows with the run size
/// and with the distinct agents, hosts, methods, users, client names and captured field
/// values (API keys), not with the log.
#[derive(Default)]
pub struct RowStore {
    needs: Needs,
    spill: SpillOptions,
    /// The run being gathered.
    cur: RunBuf,
    files: Vec<String>,
    file_ids: FxHashMap<String, u32>,
    clients: Interned,
    method: Interned,
    host: Interned,
    agent: Interned,
    user: Interned,
    /// Captured fields' values (`key=field:NAME`), every slot in one table.
    fields: Interned,
    group: Option<Group>,
    /// The runs on disk, once [`RowStore::sort`] has collected them from the writer.
    runs: Vec<Run>,
    /// The thread writing runs, from the first run written until [`RowStore::sort`].
    writer: Option<RunThread>,
    /// Rows handed to the writer.
    spilled: u64,
    /// Runs on disk once the writer is done (it merges them at `max_runs` into one).
    run_count: usize,
    /// Span of the rows written out.
    spilled_span: Option<(i64, i64)>,
    error: Option<io::Error>,
    sorted: bool,
    /// Per file, the latest arrival so far, when rows keep file order.
    log_order: Option<Vec<i64>>,
    /// Rows taken to be replayed while they were read ([`RowStore::take_before`]).
    fed: u64,
    /// Span of the rows fed.
    fed_span: Option<(i64, i64)>,
    /// The clients of the rows fed (for [`RowStore::fold_clients`]).
    fed_clients: Option<ClientLog>,
    /// The buffer [`RowStore::take_before`] gathers the rows it keeps in.
    spare: RunBuf,
    /// Rows taken and replayed already, given back for their buffers.
    feds: Vec<Fed>,
    /// Whether a row held (outside the open second) may be out of decision-time order:
    /// checked as rows are added, while they are in cache, so that rows read in order
    /// (a dataset's sorted parts) are taken without a sort.
    unsorted: bool,
    /// How many files and interned names the rows taken so far have handed over.
    sent: Sent,
}

/// Counts of names handed over with [`Fed`] rows.
#[derive(Default)]
struct Sent {
    files: usize,
    /// clients, methods, hosts, agents, users, fields.
    tables: [usize; 6],
}

impl RowStore {
    /// An empty store keeping the text fields in `needs`, spilling with the default
    /// [`SpillOptions`].
    pub fn new(needs: Needs) -> RowStore {
        RowStore::with_spill(needs, SpillOptions::default())
    }

    /// An empty store keeping the text fields in `needs`, spilling as `spill` says.
    pub fn with_spill(needs: Needs, spill: SpillOptions) -> RowStore {
        RowStore {
            needs,
            spill: SpillOptions {
                run_rows: spill.run_rows.max(1),
                max_runs: spill.max_runs.max(2),
                ..spill
            },
            ..RowStore::default()
        }
    }

    /// Keeps each file's order: a row's decision time becomes the latest time of its
    /// file so far (a clock that never goes back), and rows of one millisecond are not
    /// reordered by request time or logged refusal. For logs written in decision order
    /// (HAProxy with one thread: its accept dates go back, its log order does not).
    /// Call before the first [`RowStore::push`].
    pub fn set_log_order(&mut self) {
        self.log_order = Some(Vec::new());
    }

    /// Number of rows (those fed already included).
    pub fn len(&self) -> usize {
        (self.fed + self.spilled) as usize + self.cur.rows.len()
    }

    /// Rows taken to be replayed while they were read ([`RowStore::take_before`]).
    pub fn fed(&self) -> u64 {
        self.fed
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sorted runs written to disk so far (0 when every row fits in memory).
    pub fn spilled_runs(&self) -> usize {
        self.run_count
    }

    /// The id of an input file name (registered on first use).
    pub fn file_id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.file_ids.get(name) {
            return i;
        }
        let i = self.files.len() as u32;
        self.files.push(name.to_string());
        self.file_ids.insert(name.to_string(), i);
        i
    }

    /// The name of input file `id`.
    pub fn file_name(&self, id: u32) -> &str {
        self.files.get(id as usize).map_or("", String::as_str)
    }

    /// Adds one selected row of input file `file` (from [`RowStore::file_id`]). When
    /// the rows held reach the run size, they are handed to the writer thread first; an
    /// error writing a run is kept and returned by [`RowStore::sort`] (the rows after it
    /// are dropped).
    pub fn push(&mut self, file: u32, r: &RowInput<'_>) {
        if self.error.is_some() {
            return;
        }
        let (b, i, rc) = (r.batch, r.i, r.class);
        let mut arrival = b.ts_ms[i];
        if let Some(last) = &mut self.log_order {
            let f = file as usize;
            if last.len() <= f {
                last.resize(f + 1, i64::MIN);
            }
            arrival = arrival.max(last[f]);
            last[f] = arrival;
        }
        let second = b.precision.get(i).copied().unwrap_or(3) == 0;
        let continues = second
            && self
                .group
                .is_some_and(|g| g.file == file && g.arrival == arrival);
        if !continues {
            self.close_group();
            if (self.cur.rows.len() >= self.spill.run_rows
                || self.cur.text_bytes() >= self.spill.run_text_bytes)
                && let Err(e) = self.write_run()
            {
                self.error = Some(e);
                self.cur.clear();
                self.unsorted = false;
                return;
            }
            if second {
                self.group = Some(Group {
                    start: self.cur.rows.len(),
                    file,
                    arrival,
                });
            }
        }
        let flags = self.flags(r, second);
        let (client, name_key) = match (rc.ip, rc.client) {
            (Some(_), _) => (NONE, NONE),
            (None, ClientKey::Name(k)) => (self.clients.push(b.client.get(i)), k),
            (None, _) => (self.clients.push(b.client.get(i)), NONE),
        };
        let text = self.text_ids(b, i);
        let row = Row {
            arrival,
            line: b.line_no(i),
            rt_us: b.request_time(i).unwrap_or(NO_VALUE),
            bytes: b.size(i).unwrap_or(NO_VALUE),
            ip: rc.ip,
            file,
            client,
            name_key,
            agent: rc.agent,
            text,
            status: b.status[i],
            flags,
            who: r.who as u8,
        };
        // A row of an open second is checked when its second is spread.
        if !second
            && let Some(last) = self.cur.rows.last()
            && decision_order(last, &row).is_gt()
        {
            self.unsorted = true;
        }
        self.cur.rows.push(row);
        self.sorted = false;
    }

    /// The flags of a row: its classes, its cookie, its resolution, its order.
    fn flags(&self, r: &RowInput<'_>, second: bool) -> u8 {
        let rc = r.class;
        let (b, i) = (r.batch, r.i);
        let mut flags = 0u8;
        if rc.heavy.is_heavy() {
            flags |= HEAVY;
        }
        match rc.identity {
            Identity::Identified => flags |= IDENTIFIED,
            Identity::Anonymous => flags |= ANONYMOUS,
            Identity::Unknown => {}
        }
        match b.cookie(i) {
            Some(true) => flags |= COOKIE_KNOWN | COOKIE,
            Some(false) => flags |= COOKIE_KNOWN,
            None => {}
        }
        if second {
            flags |= SECOND;
        }
        if r.logged_refusal {
            flags |= LOGGED_REFUSAL;
        }
        if self.log_order.is_some() {
            flags |= LOG_ORDER;
        }
        flags
    }

    /// Interns or stores the text fields the candidates read of row `i` of `b`; the
    /// index of its ids in the run (`NONE` when no text field is kept).
    fn text_ids(&mut self, b: &Batch, i: usize) -> u32 {
        if self.needs.any() {
            let n = self.needs;
            let mut ids = [NONE; IDS];
            let t = [
                if n.method {
                    self.method.push(b.method.get(i))
                } else {
                    NONE
                },
                if n.path {
                    self.cur.path.push(b.path.get(i))
                } else {
                    NONE
                },
                if n.query {
                    self.cur.query.push(b.query.get(i))
                } else {
                    NONE
                },
                if n.host {
                    self.host.push(b.host.get(i))
                } else {
                    NONE
                },
                if n.agent {
                    self.agent.push(b.user_agent.get(i))
                } else {
                    NONE
                },
                if n.referer {
                    self.cur.referer.push(b.referer.get(i))
                } else {
                    NONE
                },
                if n.user {
                    self.user.push(b.user.get(i))
                } else {
                    NONE
                },
            ];
            ids[..FIELD_IDS].copy_from_slice(&t);
            for k in 0..n.field_slots() {
                ids[FIELD_IDS + k] = self.fields.push(b.field(k, i));
            }
            self.cur.texts.push(ids);
            (self.cur.texts.len() - 1) as u32
        } else {
            NONE
        }
    }

    /// Spreads the open group of 1-second rows evenly over its second, in log order,
    /// which matches a real limiter better than piling them all on the second's first
    /// millisecond.
    fn close_group(&mut self) {
        let Some(g) = self.group.take() else { return };
        let rows = &mut self.cur.rows[g.start..];
        let n = rows.len() as i64;
        if n > 1 {
            for (k, row) in rows.iter_mut().enumerate() {
                row.arrival += k as i64 * 1000 / n;
            }
        }
        // The second's rows, and the row before them, in order?
        let from = g.start.saturating_sub(1);
        if !self.unsorted
            && self.cur.rows[from..]
                .windows(2)
                .any(|w| decision_order(&w[0], &w[1]).is_gt())
        {
            self.unsorted = true;
        }
    }

    /// Hands the rows held to the writer thread (started on the first run), which sorts
    /// them and writes them out as a run while the next run is gathered; it merges the
    /// runs into one when there are [`SpillOptions::max_runs`]. At most two runs are in
    /// memory: the one being written and the one being gathered (the hand-over waits
    /// for the writer). An error of the writer's comes back here, or from
    /// [`RowStore::sort`].
    fn write_run(&mut self) -> io::Result<()> {
        if self.cur.rows.is_empty() {
            return Ok(());
        }
        if self.writer.is_none() {
            let dir = self.spill.dir.clone().unwrap_or_else(std::env::temp_dir);
            let runs = std::mem::take(&mut self.runs);
            self.writer = Some(RunThread::start(
                runs,
                self.spilled_span,
                self.needs,
                dir,
                self.spill.max_runs,
            )?);
        }
        let w = self.writer.as_mut().expect("started above");
        let rows = self.cur.rows.len() as u64;
        let next = w.back.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.cur, next);
        self.unsorted = false;
        if w.to.as_ref().is_none_or(|to| to.send(full).is_err()) {
            // The writer stopped: its error says why.
            return Err(self
                .join_writer()
                .err()
                .unwrap_or_else(|| io::Error::other("the thread writing sorted rows stopped")));
        }
        self.spilled += rows;
        self.run_count += 1;
        if self.run_count >= self.spill.max_runs {
            self.run_count = 1;
        }
        Ok(())
    }

    /// Waits for the writer thread to write every run handed to it and takes its runs.
    fn join_writer(&mut self) -> io::Result<()> {
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        drop(w.to.take());
        let done = w
            .thread
            .take()
            .map(|t| {
                t.join().unwrap_or_else(|_| {
                    Err(io::Error::other("the thread writing sorted rows failed"))
                })
            })
            .unwrap_or_else(|| Ok(Written::default()))?;
        self.runs = done.runs;
        self.spilled_span = done.span;
        Ok(())
    }

    /// Puts the rows in decision-time order: arrival, then (within a millisecond)
    /// served at once, delayed (shortest first), refused in the log; then input order.
    ///
    /// Rows stamped in whole seconds are first spread evenly over their second, in log
    /// order (a run of consecutive rows of one file with the same second), which
    /// matches a real limiter better than piling them all on the second's first
    /// millisecond.
    ///
    /// Fails if a run could not be written to disk while the rows were added.
    pub fn sort(&mut self) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        if self.sorted {
            return Ok(());
        }
        self.close_group();
        if let Some(log) = &mut self.fed_clients
            && let Err(e) = log.flush()
        {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
            return Err(e);
        }
        if let Err(e) = self.join_writer() {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
            return Err(e);
        }
        self.cur.sort();
        self.unsorted = false;
        self.sorted = true;
        Ok(())
    }

    /// Takes the rows held that are decided before `floor` (UTC ms: no row pushed later
    /// is older), in decision-time order, to be replayed now ([`Fed::replay`], on any
    /// thread): rows read in about time order (a dataset's parts, whose time ranges the
    /// manifest records) are replayed as they are read instead of being sorted on
    /// disk. The clients of the rows taken are counted (or kept on disk) for
    /// [`RowStore::fold_clients`]. `reuse` is a [`Fed`] replayed already, for its
    /// buffers (kept for a later take when none is made now).
    ///
    /// `None` once rows were written to disk as runs (those are merged by
    /// [`RowStore::for_each_sorted`], after every row is read), while the rows of one
    /// second still being gathered are older than `floor` (they are spread over their
    /// second only once complete), when no row is older than `floor`, or when fewer
    /// than a quarter of the rows held are older than `floor` and the rows held are
    /// fewer than half a run (those few are taken with the next call: a take copies
    /// every row kept). Fails if the clients cannot be written.
    pub fn take_before(&mut self, floor: i64, reuse: Option<Fed>) -> io::Result<Option<Fed>> {
        if self.error.is_some() || self.writer.is_some() || !self.runs.is_empty() {
            return Ok(None);
        }
        let limit = self.group.map_or(floor, |g| floor.min(g.arrival));
        // The rows of an open second are the last ones and no older than `limit`: the
        // others are sorted (among equal keys, positions stay in push order, which
        // the sorts after this one tie by) and those older than `limit` taken.
        let open = self.group.map_or(self.cur.rows.len(), |g| g.start);
        let rows = &mut self.cur.rows[..open];
        // A stable sort of rows already in order leaves them as they are.
        if self.unsorted {
            rows.sort_by(decision_order);
            self.unsorted = false;
        }
        debug_assert!(rows.is_sorted_by(|a, b| decision_order(a, b).is_le()));
        let n = rows.partition_point(|r| r.arrival < limit);
        let len = self.cur.rows.len();
        self.feds.extend(reuse);
        // A few rows out of many wait for the next batch (they would cost a copy of
        // every row kept), while the rows held stay well below a run.
        if n == 0 || (n * 4 < len && len < self.spill.run_rows / 2) {
            return Ok(None);
        }
        let mut fed = self.feds.pop().unwrap_or_default();
        fed.rows.clear();
        if self.needs.any() {
            // Rows with text: both parts are copied, so that the text of the rows
            // taken does not stay behind.
            let mut keep = std::mem::take(&mut self.spare);
            for (k, r) in self.cur.rows.iter().enumerate() {
                let dest = if k < n { &mut fed.rows } else { &mut keep };
                dest.copy_row(r, &self.cur);
            }
            let mut held = std::mem::replace(&mut self.cur, keep);
            held.clear();
            self.spare = held;
        } else {
            // Most rows are taken: the buffer goes, the few rows kept are copied back.
            std::mem::swap(&mut fed.rows.rows, &mut self.cur.rows);
            // Room for the rows kept and a batch like this one: buffers that go round
            // between the reader and the replay without growing.
            self.cur.rows.reserve(len);
            self.cur.rows.extend_from_slice(&fed.rows.rows[n..]);
            fed.rows.rows.truncate(n);
        }
        if let Some(g) = &mut self.group {
            g.start -= n;
        }
        fed.first = self.fed;
        // The names interned since the last rows taken, for the replaying side's copy.
        fed.names.files = self.files[self.sent.files..].to_vec();
        self.sent.files = self.files.len();
        let tables = [
            &self.clients,
            &self.method,
            &self.host,
            &self.agent,
            &self.user,
            &self.fields,
        ];
        for ((new, sent), t) in fed
            .names
            .tables
            .iter_mut()
            .zip(&mut self.sent.tables)
            .zip(tables)
        {
            new.clear();
            new.extend_from_slice(&t.vals[*sent..]);
            *sent = t.vals.len();
        }
        let rows = &fed.rows.rows;
        if let (Some(a), Some(b)) = (rows.first(), rows.last()) {
            let (a, b) = (a.arrival, b.arrival);
            self.fed_span = Some(self.fed_span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
        self.fed += rows.len() as u64;
        let dir = self.spill.dir.clone().unwrap_or_else(std::env::temp_dir);
        let log = self
            .fed_clients
            .get_or_insert_with(|| ClientLog::new(&dir, clients::COUNTED));
        if let Err(e) = rows.iter().try_for_each(|r| log.push(r.ip, r.name_key)) {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
            return Err(e);
        }
        Ok(Some(fed))
    }

    /// First and last decision time, if any row.
    pub fn span(&self) -> Option<(i64, i64)> {
        let held = self.cur.rows.iter().map(|r| r.arrival);
        let min = held.clone().min();
        let max = held.max();
        [self.fed_span, self.spilled_span, min.zip(max)]
            .into_iter()
            .flatten()
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    }

    /// The request of a row, for the replay.
    #[inline]
    fn request<'a>(
        &'a self,
        index: u64,
        r: &Row,
        t: &[u32; IDS],
        f: [Option<&'a [u8]>; 3],
    ) -> Request<'a> {
        Tables {
            clients: &self.clients.vals,
            method: &self.method.vals,
            host: &self.host.vals,
            agent: &self.agent.vals,
            user: &self.user.vals,
            fields: &self.fields.vals,
        }
        .request(index, r, t, f)
    }

    /// The report-side facts of a row.
    #[inline]
    fn meta(r: &Row) -> RowMeta {
        r.meta()
    }

    /// Calls `f` with every row not taken by [`RowStore::take_before`], in decision-time
    /// order ([`RowStore::sort`] first): the request for the replay (its `index` is its position in that order) and the row's
    /// report-side facts. Rows written to disk are merged back on a thread of their own,
    /// handed over in chunks of 4096 rows (a few chunks in flight), so reading and
    /// merging the runs overlaps the replay.
    pub fn for_each_sorted(
        &self,
        mut f: impl FnMut(&Request<'_>, &RowMeta) -> io::Result<()>,
    ) -> io::Result<()> {
        if !self.sorted {
            return Err(io::Error::other("replay rows fed before they were sorted"));
        }
        if self.runs.is_empty() {
            for (i, r) in self.cur.rows.iter().enumerate() {
                let (t, fs) = self.cur.held_text(r);
                f(
                    &self.request(self.fed + i as u64, r, &t, fs),
                    &Self::meta(r),
                )?;
            }
            return Ok(());
        }
        let (runs, needs, held) = (&self.runs, self.needs, &self.cur);
        let (to, from) = bounded::<io::Result<Chunk>>(4);
        let (back_tx, back) = unbounded::<Chunk>();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let mut chunk = Chunk::default();
                let res = merge(runs, needs, held, |src| {
                    let (r, t, fs) = current(src);
                    chunk.push(r, t, fs);
                    if chunk.rows.len() >= CHUNK_ROWS || chunk.text.len() >= CHUNK_TEXT {
                        let next = back.try_recv().unwrap_or_default();
                        let full = std::mem::replace(&mut chunk, next);
                        // The replay stopped (its own error): stop reading.
                        to.send(Ok(full))
                            .map_err(|_| io::Error::other("replay stopped"))?;
                    }
                    Ok(())
                });
                let last = match res {
                    Ok(()) => Ok(chunk),
                    Err(e) => Err(e),
                };
                let _ = to.send(last);
            });
            // Owned here, so that a replay that stops early drops it and the reader's
            // next hand-over fails instead of waiting for ever.
            let from = from;
            let mut i = self.fed;
            for chunk in &from {
                let chunk = chunk?;
                for k in 0..chunk.rows.len() {
                    let (r, t, fs) = chunk.row(k);
                    f(&self.request(i, r, &t, fs), &Self::meta(r))?;
                    i += 1;
                }
                let _ = back_tx.send(chunk.cleared());
            }
            Ok(())
        })
    }

    /// Folds the client of every row (its address, or the classifier's key of a client
    /// that is not one) with a number of rows (a client's rows are given at once where
    /// they were counted), in no particular order, on up to `threads` threads: each
    /// folds a share of the runs on disk into a state of its own from `init`, the rows
    /// held in memory and those counted go into the first. The states come back in
    /// thread order.
    pub fn fold_clients<S: Send>(
        &self,
        threads: usize,
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, Option<IpAddr>, Option<ClientKey>, u64) + Sync,
    ) -> io::Result<Vec<S>> {
        let name = |k: u32| (k != NONE).then_some(ClientKey::Name(k));
        let logged = self.fed_clients.as_ref().map_or(0, ClientLog::files);
        let n = threads.clamp(1, (self.runs.len() + logged).max(1));
        let share = |t: usize, s: &mut S| -> io::Result<()> {
            for run in self.runs.iter().skip(t).step_by(n) {
                let mut d = RunReader::new(run, self.needs)?;
                while let Some((ip, k)) = d.next_client()? {
                    f(s, ip, name(k), 1);
                }
            }
            if let Some(log) = &self.fed_clients {
                // Continue the runs' round: every thread gets a share of the files.
                let first = (n - self.runs.len() % n + t) % n;
                for k in (first..logged).step_by(n) {
                    log.fold(k, |ip, key| f(s, ip, name(key), 1))?;
                }
            }
            Ok(())
        };
        let mut states: Vec<S> = (0..n).map(|_| init()).collect();
        std::thread::scope(|scope| {
            let (first, rest) = states.split_first_mut().expect("n >= 1");
            let others: Vec<_> = rest
                .iter_mut()
                .enumerate()
                .map(|(t, s)| scope.spawn(move || share(t + 1, s)))
                .collect();
            let mut res = share(0, first);
            for h in others {
                let r = h.join().unwrap_or_else(|_| {
                    Err(io::Error::other("a thread reading sorted rows failed"))
                });
                res = res.and(r);
            }
            res
        })?;
        if let Some(s) = states.first_mut() {
            for r in &self.cur.rows {
                f(s, r.ip, name(r.name_key), 1);
            }
            if let Some(log) = &self.fed_clients {
                log.fold_counted(|ip, key, n| f(s, ip, name(key), n));
            }
        }
        Ok(states)
    }
}
