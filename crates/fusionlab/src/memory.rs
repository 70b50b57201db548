//! `--max-memory`: a run whose estimated peak memory is above the limit is
//! refused before it starts (exit status 2), with what to lower, rather than
//! dying of "memory allocation failed" halfway or pushing the machine into
//! swap. The estimate is `fusion_scenario::estimate`; the default limit is
//! half of the machine's physical memory.

use fusion_scenario::LoadedScenario;
use fusion_scenario::estimate::{MemoryEstimate, estimate};

use crate::Failure;

/// Without `/proc/meminfo` (not Linux), the limit is this.
const FALLBACK: u64 = 4 << 30;

/// The most memory a run may need, and where that figure comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
    /// `--max-memory 4G`, or how the default was found.
    pub origin: String,
}

impl MemoryLimit {
    /// `--max-memory` as given, or the default: half of the physical memory
    /// (the rest is the system's and other programs'), else 4 GiB.
    pub fn new(flag: Option<u64>) -> MemoryLimit {
        match flag {
            Some(bytes) => MemoryLimit {
                bytes,
                origin: format!("--max-memory {}", size_text(bytes)),
            },
            None => match physical_memory() {
                Some(total) => MemoryLimit {
                    bytes: total / 2,
                    origin: format!(
                        "the default, half of this machine's {}; set --max-memory to change it",
                        size_text(total)
                    ),
                },
                None => MemoryLimit {
                    bytes: FALLBACK,
                    origin: format!(
                        "the default where the machine's memory is unknown, {}; set --max-memory to change it",
                        size_text(FALLBACK)
                    ),
                },
            },
        }
    }
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_total(&text)
}

/// The `MemTotal:  24576000 kB` line of a meminfo text, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// `4G`, `512M`, `1536K`, `2T`, `1.5G` or plain bytes (the clap parser of
/// `--max-memory`); K, M, G, T are powers of 1024.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], Some(c.to_ascii_uppercase())),
        _ => (t, None),
    };
    let shift = match unit {
        None | Some('B') => 0,
        Some('K') => 10,
        Some('M') => 20,
        Some('G') => 30,
        Some('T') => 40,
        Some(_) => return Err(format!("`{t}`: expected a size such as 4G, 512M or 1536K")),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{t}`: expected a size such as 4G, 512M or 1536K"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !(1.0..1e18).contains(&bytes) {
        return Err(format!("`{t}`: expected a size from 1 byte to 800P"));
    }
    // Within 1..1e18: a u64 holds it (fractions of a byte are dropped).
    Ok(bytes as u64)
}

/// `1.5 GiB`, `512 MiB`, `40 KiB`, `100 B`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    // One decimal below 10 when it says something: 1.5 GiB, 4 GiB, 12 GiB.
    let decimals = if v < 10.0 && v.fract() >= 0.05 && v.fract() < 0.95 {
        1
    } else {
        0
    };
    format!("{v:.decimals$} {}", UNITS[unit])
}

/// The estimate of `loaded`'s run, or the failure that refuses it when it
/// is above `limit`: the estimate, the limit, and what to lower.
pub fn within_limit(
    loaded: &LoadedScenario,
    check: bool,
    limit: &MemoryLimit,
) -> Result<MemoryEstimate, Failure> {
    let e = estimate(loaded, check);
    if e.bytes <= limit.bytes {
        return Ok(e);
    }
    let variant = if loaded.has_variants {
        format!(" (variant `{}`)", e.variant)
    } else {
        String::new()
    };
    let mut message = format!(
        "fusionlab: {}: the run needs an estimated {} of memory{variant}, more than the limit of {} ({}); the largest parts:",
        loaded.path,
        size_text(e.bytes),
        size_text(limit.bytes),
        limit.origin
    );
    message.push_str(&parts_text(&e));
    message.push_str(LOWER);
    Err(Failure::input(message))
}

/// What a refusal ends with.
pub const LOWER: &str = "\nlower those sizes (in the file or with --set KEY=VALUE), or raise --max-memory if the machine has the memory";

/// The parts that matter, a line each: the largest, and any other of a
/// tenth of the whole or more.
pub fn parts_text(e: &MemoryEstimate) -> String {
    let mut text = String::new();
    for (i, p) in e.parts.iter().enumerate() {
        if i > 0 && p.bytes < e.bytes / 10 {
            break;
        }
        text.push_str(&format!(
            "\n  {:>9}  {}: lower {}",
            size_text(p.bytes),
            p.what,
            p.lower
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_powers_of_1024() {
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("1536K"), Ok(1536 << 10));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert_eq!(parse_size("1000"), Ok(1000));
        for bad in ["", "G", "4X", "-1G", "0", "lots", "1e30"] {
            assert!(parse_size(bad).is_err(), "{bad:?} parses");
        }
    }

    #[test]
    fn sizes_print_in_binary_units() {
        assert_eq!(size_text(100), "100 B");
        assert_eq!(size_text(3 << 29), "1.5 GiB");
        assert_eq!(size_text(512 << 20), "512 MiB");
        assert_eq!(size_text(4 << 30), "4 GiB");
    }

    #[test]
    fn meminfo_gives_the_total() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\n";
        assert_eq!(meminfo_total(text), Some(24_576_000 * 1024));
        assert_eq!(meminfo_total("MemFree: 1 kB\n"), None);
        assert_eq!(meminfo_total("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn the_default_is_half_the_machine_or_a_fixed_figure() {
        let limit = MemoryLimit::new(None);
        match physical_memory() {
            Some(total) => assert_eq!(limit.bytes, total / 2),
            None => assert_eq!(limit.bytes, FALLBACK),
        }
        assert_eq!(MemoryLimit::new(Some(1 << 30)).bytes, 1 << 30);
    }
}
