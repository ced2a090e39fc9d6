//! The thread that sorts and writes runs while the next one is gathered.

use std::io;
use std::path::PathBuf;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use super::merge::{current, merge};
use super::needs::Needs;
use super::run_buf::RunBuf;
use super::spill::{Run, RunWriter};

/// What the writer thread leaves: the runs, and the span of their rows.
#[derive(Default)]
pub(super) struct Written {
    pub(super) runs: Vec<Run>,
    pub(super) span: Option<(i64, i64)>,
}

/// The thread that sorts and writes runs while the next one is gathered.
pub(super) struct RunThread {
    /// Full runs to write (a rendezvous: handing one over waits until the thread takes
    /// it, so at most one run waits besides the one being gathered).
    pub(super) to: Option<Sender<RunBuf>>,
    /// Written runs' emptied buffers, to gather the next run in.
    pub(super) back: Receiver<RunBuf>,
    pub(super) thread: Option<std::thread::JoinHandle<io::Result<Written>>>,
}

impl RunThread {
    /// Starts the writer, continuing from `runs` already on disk.
    pub(super) fn start(
        runs: Vec<Run>,
        span: Option<(i64, i64)>,
        needs: Needs,
        dir: PathBuf,
        max_runs: usize,
    ) -> io::Result<RunThread> {
        let (to, rx) = bounded::<RunBuf>(0);
        let (back_tx, back) = unbounded::<RunBuf>();
        let thread = std::thread::Builder::new()
            .name("replay-runs".into())
            .spawn(move || {
                let mut done = Written { runs, span };
                for mut buf in rx {
                    let (run, (first, last)) = buf.write(&dir, needs)?;
                    done.span = Some(match done.span {
                        None => (first, last),
                        Some((a, b)) => (a.min(first), b.max(last)),
                    });
                    done.runs.push(run);
                    if done.runs.len() >= max_runs {
                        let mut w = RunWriter::create(&dir, needs)?;
                        let none = RunBuf::default();
                        merge(&done.runs, needs, &none, |src| {
                            let (r, t, [p, q, f]) = current(src);
                            w.put(r, &t, p, q, f)
                        })?;
                        done.runs = vec![w.finish()?];
                    }
                    buf.clear();
                    // The store may be gone already (an error): nothing to hand back to.
                    let _ = back_tx.send(buf);
                }
                Ok(done)
            })?;
        Ok(RunThread {
            to: Some(to),
            back,
            thread: Some(thread),
        })
    }
}
