//! What the model shows about parallel execution: a `gv$px_session`-style
//! row per QC and slave (with the table-queue bytes it sent and received
//! across the interconnect), one row per statement executed, and bytes per
//! instance pair. Rows are recorded when a statement's servers are released,
//! so a report over an interval shows the statements that ended in it.

/// One QC or slave of one execution (`gv$px_session` plus `v$pq_tqstat`-like bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PxSessionRow {
    /// 1-based instance of the QC.
    pub qc_inst: u8,
    pub qc_sid: u32,
    pub exec: u32,
    pub query: String,
    /// 1-based instance of this process.
    pub inst: u8,
    /// `QC` or the server's name (`p000`).
    pub name: String,
    /// Server set (1 or 2); 0 for the QC.
    pub set: u8,
    pub requested_dop: u32,
    pub dop: u32,
    /// Rows it read from tables or received from a table queue.
    pub rows: u64,
    /// Table-queue bytes sent to and received from other instances.
    pub bytes_sent_remote: u64,
    pub bytes_recv_remote: u64,
    /// Table-queue bytes to processes of its own instance.
    pub bytes_sent_local: u64,
}

/// One execution of a parallel statement, as its QC saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PxQueryRow {
    pub qc_inst: u8,
    pub qc_sid: u32,
    pub exec: u32,
    pub query: String,
    pub plan: &'static str,
    pub requested_dop: u32,
    /// 1 when it ran serially.
    pub dop: u32,
    pub sets: u8,
    /// Slaves per 1-based instance, by instance.
    pub slaves: Vec<(u8, u32)>,
    pub queued_ns: u64,
    pub elapsed_ns: u64,
    pub result_rows: u64,
    /// Index leaves built (index builds).
    pub leaves: u64,
}

/// Table-queue traffic from one instance to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PxPair {
    pub from: u8,
    pub to: u8,
    pub bytes: u64,
    pub buffers: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PxView {
    pub sessions: Vec<PxSessionRow>,
    pub queries: Vec<PxQueryRow>,
    /// Sorted by (from, to).
    pub pairs: Vec<PxPair>,
}

impl PxView {
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty() && self.queries.is_empty() && self.pairs.is_empty()
    }

    pub fn add_pair(&mut self, from: u8, to: u8, bytes: u64, buffers: u64) {
        match self
            .pairs
            .binary_search_by_key(&(from, to), |p| (p.from, p.to))
        {
            Ok(i) => {
                self.pairs[i].bytes += bytes;
                self.pairs[i].buffers += buffers;
            }
            Err(i) => self.pairs.insert(
                i,
                PxPair {
                    from,
                    to,
                    bytes,
                    buffers,
                },
            ),
        }
    }

    /// What happened after `earlier` (rows are only ever appended; a view
    /// from another process may still be shorter, hence no assert, as
    /// `Stats::since`).
    pub fn since(&self, earlier: &PxView) -> PxView {
        let tail = |a: usize, b: usize| a.min(b);
        let mut out = PxView {
            sessions: self.sessions[tail(earlier.sessions.len(), self.sessions.len())..].to_vec(),
            queries: self.queries[tail(earlier.queries.len(), self.queries.len())..].to_vec(),
            pairs: Vec::new(),
        };
        for p in &self.pairs {
            let before = earlier
                .pairs
                .iter()
                .find(|e| (e.from, e.to) == (p.from, p.to))
                .map_or((0, 0), |e| (e.bytes, e.buffers));
            let (bytes, buffers) = (
                p.bytes.saturating_sub(before.0),
                p.buffers.saturating_sub(before.1),
            );
            if bytes > 0 || buffers > 0 {
                out.add_pair(p.from, p.to, bytes, buffers);
            }
        }
        out
    }

    /// Add another instance's view (a `gv$` view is the union of the `v$` ones).
    pub fn merge(&mut self, other: &PxView) {
        self.sessions.extend(other.sessions.iter().cloned());
        self.queries.extend(other.queries.iter().cloned());
        for p in &other.pairs {
            self.add_pair(p.from, p.to, p.bytes, p.buffers);
        }
    }
}
