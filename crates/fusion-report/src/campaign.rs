//! Campaigns split over machines: the runs of a sweep or of a chaos
//! campaign cut into contiguous slices (`--parts N --part K`), what a
//! slice's JSON says about its place, and the checks `fusionlab merge`
//! makes before it puts the slices back together (same campaign, every
//! part once, no run twice or missing). The JSON of a whole run is read
//! back with the helpers here too.

use std::ops::Range;

use serde_json::{Value, json};

/// Which contiguous slice of a campaign's runs one invocation ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// 1-based, as Swarm's `{{.Task.Slot}}`.
    pub part: u32,
    pub parts: u32,
    /// The whole campaign's runs.
    pub runs_total: usize,
}

impl Slice {
    /// Part `part` (1-based) of `parts` of a campaign of `runs_total` runs.
    /// Every part has at least one run, so there are no more parts than runs.
    pub fn new(part: u32, parts: u32, runs_total: usize) -> Result<Slice, String> {
        if parts == 0 {
            return Err("--parts 0: give at least 1 part".to_string());
        }
        if part == 0 || part > parts {
            return Err(format!(
                "part {part} of {parts}: parts are numbered 1 to {parts} \
                 (--part counts from 1, --part-index from 0)"
            ));
        }
        if usize::try_from(parts).map_or(true, |p| p > runs_total) {
            return Err(format!(
                "--parts {parts}: more parts than the campaign's {runs_total} runs \
                 (every part runs at least one)"
            ));
        }
        Ok(Slice {
            part,
            parts,
            runs_total,
        })
    }

    /// Where part `k` (0..=parts) starts: runs are shared out evenly, the
    /// first parts one fewer when they do not divide.
    fn boundary(&self, k: u32) -> usize {
        let at = u128::from(k) * self.runs_total as u128 / u128::from(self.parts);
        // At most runs_total, which is a usize.
        usize::try_from(at).unwrap_or(self.runs_total)
    }

    /// The slice's runs, as indices into the whole campaign's.
    pub fn range(&self) -> Range<usize> {
        self.boundary(self.part - 1)..self.boundary(self.part)
    }

    /// `part 2 of 4: runs 26 to 50 of 100`.
    pub fn describe(&self) -> String {
        let r = self.range();
        format!(
            "part {} of {}: runs {} to {} of {} (merge the parts' --json with `fusionlab merge`)",
            self.part,
            self.parts,
            r.start + 1,
            r.end,
            self.runs_total
        )
    }

    /// The JSON's `part`.
    pub fn json(&self) -> Value {
        let r = self.range();
        json!({
            "part": self.part,
            "parts": self.parts,
            "first_run": r.start,
            "runs": r.len(),
            "runs_total": self.runs_total,
        })
    }

    /// A JSON `part` back; its runs must be where `--parts` puts them.
    pub fn from_json(v: &Value) -> Result<Slice, String> {
        let number = |key: &str| -> Result<u64, String> { u64_of(field(v, key)?, key) };
        let small = |key: &str| -> Result<u32, String> {
            u32::try_from(number(key)?).map_err(|_| format!("part.{key}: too large"))
        };
        let index = |key: &str| -> Result<usize, String> {
            usize::try_from(number(key)?).map_err(|_| format!("part.{key}: too large"))
        };
        let s = Slice::new(small("part")?, small("parts")?, index("runs_total")?)?;
        let (first, runs) = (index("first_run")?, index("runs")?);
        if s.range() != (first..first.saturating_add(runs)) {
            return Err(format!(
                "part {} of {}: runs {first}..{} are not where --parts puts them ({:?})",
                s.part,
                s.parts,
                first.saturating_add(runs),
                s.range()
            ));
        }
        Ok(s)
    }
}

/// The slices of one campaign in part order, after checking that they are
/// parts of the same split, each exactly once. `slices` are (file, its slice).
pub fn in_part_order(slices: &[(String, Slice)]) -> Result<Vec<usize>, String> {
    let Some((first_file, first)) = slices.first() else {
        return Err("no file to merge".to_string());
    };
    let mut by_part: Vec<Option<usize>> = vec![None; first.parts as usize];
    for (i, (file, s)) in slices.iter().enumerate() {
        if s.parts != first.parts || s.runs_total != first.runs_total {
            return Err(format!(
                "{file}: part {} of {} of {} runs, but {first_file} is part {} of {} of {} runs: \
                 not the same split",
                s.part, s.parts, s.runs_total, first.part, first.parts, first.runs_total
            ));
        }
        // `Slice` keeps 1 <= part <= parts.
        let slot = &mut by_part[s.part as usize - 1];
        if let Some(j) = *slot {
            return Err(format!(
                "{} and {file} are both part {} of {}: their runs overlap",
                slices[j].0, s.part, s.parts
            ));
        }
        *slot = Some(i);
    }
    by_part
        .iter()
        .enumerate()
        .map(|(k, i)| {
            i.ok_or_else(|| {
                let missing = Slice {
                    part: u32::try_from(k + 1).unwrap_or(u32::MAX),
                    ..*first
                };
                let r = missing.range();
                format!(
                    "part {} of {} is missing (runs {} to {} of {})",
                    missing.part,
                    first.parts,
                    r.start + 1,
                    r.end,
                    first.runs_total
                )
            })
        })
        .collect()
}

/// A field of a JSON object, or an error naming it.
pub(crate) fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("no `{key}`"))
}

pub(crate) fn str_of<'a>(v: &'a Value, what: &str) -> Result<&'a str, String> {
    v.as_str().ok_or_else(|| format!("`{what}`: not a string"))
}

pub(crate) fn u64_of(v: &Value, what: &str) -> Result<u64, String> {
    v.as_u64()
        .ok_or_else(|| format!("`{what}`: not a whole number"))
}

pub(crate) fn bool_of(v: &Value, what: &str) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("`{what}`: not true or false"))
}

pub(crate) fn array_of<'a>(v: &'a Value, what: &str) -> Result<&'a Vec<Value>, String> {
    v.as_array().ok_or_else(|| format!("`{what}`: not a list"))
}

pub(crate) fn strings_of(v: &Value, what: &str) -> Result<Vec<String>, String> {
    array_of(v, what)?
        .iter()
        .map(|s| str_of(s, what).map(str::to_string))
        .collect()
}

/// A figure as the per-run JSON keeps it: a number, or `NaN`, `inf`,
/// `-inf` (which JSON numbers cannot be).
pub(crate) fn figure_json(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else if v.is_nan() {
        json!("NaN")
    } else if v > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}

pub(crate) fn figure_of(v: &Value, what: &str) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("`{what}`: not a number")),
        Value::String(s) if s == "NaN" => Ok(f64::NAN),
        Value::String(s) if s == "inf" => Ok(f64::INFINITY),
        Value::String(s) if s == "-inf" => Ok(f64::NEG_INFINITY),
        _ => Err(format!("`{what}`: not a number")),
    }
}

/// The first of `keys` on which two campaigns' JSON differ.
pub(crate) fn first_difference<'a>(a: &Value, b: &Value, keys: &[&'a str]) -> Option<&'a str> {
    keys.iter().copied().find(|k| a.get(k) != b.get(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_runs_once_in_order() {
        for (runs, parts) in [(10, 3), (7, 7), (100, 4), (5, 1), (1_000, 7)] {
            let mut next = 0;
            for part in 1..=parts {
                let s = Slice::new(part, parts, runs).expect("valid");
                let r = s.range();
                assert_eq!(r.start, next, "{runs} runs, part {part} of {parts}");
                assert!(!r.is_empty());
                assert_eq!(Slice::from_json(&s.json()), Ok(s));
                next = r.end;
            }
            assert_eq!(next, runs);
        }
        assert_eq!(Slice::new(1, 3, 10).expect("valid").range(), 0..3);
        assert_eq!(Slice::new(3, 3, 10).expect("valid").range(), 6..10);
    }

    #[test]
    fn bad_parts_are_refused() {
        assert!(Slice::new(1, 0, 5).unwrap_err().contains("at least 1"));
        assert!(Slice::new(0, 2, 5).unwrap_err().contains("numbered 1 to 2"));
        assert!(Slice::new(3, 2, 5).unwrap_err().contains("numbered 1 to 2"));
        assert!(Slice::new(1, 6, 5).unwrap_err().contains("more parts"));
        let mut j = Slice::new(2, 2, 10).expect("valid").json();
        j["first_run"] = json!(4);
        assert!(Slice::from_json(&j).unwrap_err().contains("not where"));
    }

    #[test]
    fn parts_merge_once_each() {
        let s = |part, parts| Slice::new(part, parts, 9).expect("valid");
        let files = |v: &[Slice]| -> Vec<(String, Slice)> {
            v.iter()
                .map(|s| (format!("p{}.json", s.part), *s))
                .collect()
        };
        assert_eq!(
            in_part_order(&files(&[s(3, 3), s(1, 3), s(2, 3)])),
            Ok(vec![1, 2, 0])
        );
        let e = in_part_order(&files(&[s(1, 3), s(3, 3)])).unwrap_err();
        assert!(
            e.contains("part 2 of 3 is missing (runs 4 to 6 of 9)"),
            "{e}"
        );
        let e = in_part_order(&files(&[s(1, 3), s(1, 3), s(2, 3)])).unwrap_err();
        assert!(e.contains("both part 1 of 3"), "{e}");
        let e = in_part_order(&files(&[s(1, 3), s(2, 2)])).unwrap_err();
        assert!(e.contains("not the same split"), "{e}");
    }

    #[test]
    fn figures_that_json_numbers_cannot_hold_come_back() {
        for v in [1.5, 0.1 + 0.2, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(figure_of(&figure_json(v), "x"), Ok(v));
        }
        assert!(figure_of(&figure_json(f64::NAN), "x").is_ok_and(f64::is_nan));
    }
}
