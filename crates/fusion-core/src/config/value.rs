//! A parameter's value as a file writes it, and sizes such as `64M`.

/// A parameter value as written: a number or text (sizes like `64M` are text).
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(u64),
    Text(String),
}

/// Parse `8192`, `64K`, `64M`, `1G` as Oracle accepts sizes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("expected a number or a size such as 64M, got `{t}`"))
}
