//! Where the run store lives: `$FUSIONLAB_DATA_DIR`, else
//! `$XDG_DATA_HOME/fusionlab`, else `~/.local/share/fusionlab` (the XDG
//! base directory rules: a relative `XDG_DATA_HOME` is ignored).

use std::ffi::OsString;
use std::path::PathBuf;

/// The environment variable that puts the store elsewhere (tests point it
/// at a temporary directory).
pub const DATA_DIR_ENV: &str = "FUSIONLAB_DATA_DIR";

/// The store's directory from the environment (`var` reads a variable), or
/// why there is none.
pub fn data_dir(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, String> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = set(DATA_DIR_ENV) {
        return Ok(d);
    }
    if let Some(d) = set("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
        return Ok(d.join("fusionlab"));
    }
    if let Some(home) = set("HOME") {
        return Ok(home.join(".local/share/fusionlab"));
    }
    Err(format!(
        "no directory for the run store: set {DATA_DIR_ENV}, XDG_DATA_HOME or HOME \
         (or pass --no-store)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_first_of_the_variables_that_is_set_wins() {
        let all = [
            (DATA_DIR_ENV, "/tmp/fl"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(data_dir(env(&all)), Ok(PathBuf::from("/tmp/fl")));
        assert_eq!(data_dir(env(&all[1..])), Ok(PathBuf::from("/x/fusionlab")));
        assert_eq!(
            data_dir(env(&[("XDG_DATA_HOME", "relative"), ("HOME", "/home/u")])),
            Ok(PathBuf::from("/home/u/.local/share/fusionlab")),
            "a relative XDG_DATA_HOME is ignored"
        );
        assert_eq!(
            data_dir(env(&[(DATA_DIR_ENV, ""), ("HOME", "/h")])),
            Ok(PathBuf::from("/h/.local/share/fusionlab")),
            "an empty variable is not set"
        );
        assert!(data_dir(env(&[])).is_err());
    }
}
