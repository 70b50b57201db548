//! Where a trace goes (a file, gzipped when its name ends in `.gz`, or
//! memory for tests) and the window of cluster time it keeps
//! (`--trace-window A..B`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::str::FromStr;

use flate2::Compression;
use flate2::write::GzEncoder;
use fusion_core::config::Nanos;

/// Bytes buffered before a write to the file (or the compressor).
const BUFFER_BYTES: usize = 1 << 20;

/// The trace's destination. Counts the bytes of JSON written (before any
/// compression), the size the trace has once unpacked.
pub struct TraceOut {
    sink: Sink,
    json_bytes: u64,
}

enum Sink {
    File(BufWriter<File>),
    Gzip(BufWriter<GzEncoder<File>>),
    Memory(Vec<u8>),
}

impl TraceOut {
    /// Create (truncate) `path`; gzip when its name ends in `.gz`.
    pub fn create(path: &Path) -> io::Result<TraceOut> {
        let file = File::create(path)?;
        let gz = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let sink = if gz {
            Sink::Gzip(BufWriter::with_capacity(
                BUFFER_BYTES,
                GzEncoder::new(file, Compression::default()),
            ))
        } else {
            Sink::File(BufWriter::with_capacity(BUFFER_BYTES, file))
        };
        Ok(TraceOut {
            sink,
            json_bytes: 0,
        })
    }

    /// A trace kept in memory ([`TraceOut::finish`] returns it).
    pub fn memory() -> TraceOut {
        TraceOut {
            sink: Sink::Memory(Vec::new()),
            json_bytes: 0,
        }
    }

    /// Bytes of JSON written so far.
    pub fn json_bytes(&self) -> u64 {
        self.json_bytes
    }

    /// Flush everything (and end the gzip stream); the bytes, for a trace
    /// kept in memory.
    pub fn finish(self) -> io::Result<Vec<u8>> {
        match self.sink {
            Sink::File(mut w) => {
                w.flush()?;
                Ok(Vec::new())
            }
            Sink::Gzip(w) => {
                let gz = w.into_inner().map_err(|e| e.into_error())?;
                gz.finish()?.flush()?;
                Ok(Vec::new())
            }
            Sink::Memory(v) => Ok(v),
        }
    }
}

impl Write for TraceOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = match &mut self.sink {
            Sink::File(w) => w.write(buf)?,
            Sink::Gzip(w) => w.write(buf)?,
            Sink::Memory(v) => v.write(buf)?,
        };
        self.json_bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::File(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}

/// The cluster time a trace keeps, `[from_ns, to_ns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceWindow {
    pub from_ns: Nanos,
    pub to_ns: Nanos,
}

impl TraceWindow {
    /// The whole run.
    pub const ALL: TraceWindow = TraceWindow {
        from_ns: 0,
        to_ns: Nanos::MAX,
    };

    /// Whether `[start, end]` has any time in the window.
    pub fn overlaps(&self, start: Nanos, end: Nanos) -> bool {
        start < self.to_ns && end > self.from_ns || (start == end && self.contains(start))
    }

    pub fn contains(&self, at: Nanos) -> bool {
        at >= self.from_ns && at < self.to_ns
    }

    /// `[start, end]` cut to the window.
    pub fn clip(&self, start: Nanos, end: Nanos) -> (Nanos, Nanos) {
        (start.max(self.from_ns), end.min(self.to_ns))
    }
}

/// Seconds of cluster time `text` names (`12`, `2.5`), in nanoseconds.
fn seconds_ns(text: &str) -> Option<Nanos> {
    let s: f64 = text.trim().parse().ok()?;
    if !s.is_finite() || !(0.0..=1e9).contains(&s) {
        return None;
    }
    // Below 1e18 ns: exact enough and within u64.
    Some((s * 1e9).round() as Nanos)
}

impl FromStr for TraceWindow {
    type Err = String;

    /// `A..B`: from A to B seconds of cluster time, `0 <= A < B`.
    fn from_str(text: &str) -> Result<TraceWindow, String> {
        let Some((a, b)) = text.split_once("..") else {
            return Err(format!(
                "--trace-window {text}: expected A..B in seconds of cluster time, e.g. 10..12.5"
            ));
        };
        let bound = |t: &str, which: &str| {
            seconds_ns(t).ok_or_else(|| {
                format!(
                    "--trace-window {text}: {which} `{t}` is not a number of seconds \
                     (0 or more, e.g. 10 or 12.5)"
                )
            })
        };
        let from_ns = bound(a, "the start")?;
        let to_ns = bound(b, "the end")?;
        if from_ns >= to_ns {
            return Err(format!(
                "--trace-window {text}: the start must come before the end"
            ));
        }
        Ok(TraceWindow { from_ns, to_ns })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_two_times_in_seconds_in_order() {
        let w: TraceWindow = "10..12.5".parse().unwrap();
        assert_eq!(w.from_ns, 10_000_000_000);
        assert_eq!(w.to_ns, 12_500_000_000);
        for bad in [
            "10", "12..10", "3..3", "-1..2", "a..2", "1..b", "..2", "1..inf",
        ] {
            let e = bad.parse::<TraceWindow>().unwrap_err();
            assert!(e.starts_with("--trace-window "), "{bad}: {e}");
        }
    }

    #[test]
    fn slices_are_cut_to_the_window() {
        let w = TraceWindow {
            from_ns: 10,
            to_ns: 20,
        };
        assert!(w.overlaps(5, 15) && w.overlaps(15, 25) && w.overlaps(12, 12));
        assert!(!w.overlaps(0, 10) && !w.overlaps(20, 30) && !w.overlaps(20, 20));
        assert_eq!(w.clip(5, 25), (10, 20));
    }
}
