//! The instance's error log: problems with a peer's message or an I/O,
//! reported to the driver and never panicked on.

use crate::types::InstId;

/// Problems an instance keeps for its driver (the last one says more followed).
pub const ERRORS_MAX: usize = 1000;

/// Bounded: a peer that sends garbage for ever must not grow the instance
/// without bound. The only way in is [`ErrorLog::push`].
#[derive(Debug, Default)]
pub(super) struct ErrorLog {
    kept: Vec<String>,
}

impl ErrorLog {
    /// Keep `problem` (prefixed with the instance) while there is room; the
    /// last place says that more followed, and later problems are dropped.
    pub fn push(&mut self, me: InstId, problem: &str) {
        let n = self.kept.len();
        if n + 1 < ERRORS_MAX {
            self.kept.push(format!("{me}: {problem}"));
        } else if n + 1 == ERRORS_MAX {
            self.kept.push(format!(
                "{me}: more problems followed; only the first {} are kept",
                ERRORS_MAX - 1
            ));
        }
        debug_assert!(
            self.kept.len() <= ERRORS_MAX,
            "the error log outgrew its bound"
        );
    }

    pub fn as_slice(&self) -> &[String] {
        &self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_stops_at_its_bound_and_says_so() {
        let mut log = ErrorLog::default();
        for k in 0..3 * ERRORS_MAX {
            log.push(InstId(1), &format!("problem {k}"));
        }
        let kept = log.as_slice();
        assert_eq!(kept.len(), ERRORS_MAX);
        assert_eq!(kept[0], format!("{}: problem 0", InstId(1)));
        assert_eq!(
            kept[ERRORS_MAX - 2],
            format!("{}: problem {}", InstId(1), ERRORS_MAX - 2)
        );
        assert!(kept[ERRORS_MAX - 1].contains("more problems followed"));
    }
}
