//! The parallel-execution parameters of one instance, under their init.ora
//! names, with Oracle's defaults derived from `cpu_count` and
//! `parallel_threads_per_cpu` as the T-series white paper tabulates them
//! (seeds/002): `parallel_max_servers = 10 x cpu_count`,
//! `parallel_servers_target = 4 x cpu_count x parallel_threads_per_cpu`,
//! degree limit `CPU = cpu_count x parallel_threads_per_cpu`.

use super::units::{NS_PER_S, Nanos};
use super::value::{ParamValue, parse_size};
use crate::px::{DegreeLimit, DegreePolicy};

/// The parallel-execution part of [`crate::config::Params`].
#[derive(Clone, Debug, PartialEq)]
pub struct PxParams {
    pub threads_per_cpu: u32,
    /// `None`: derived (10 x cpu_count).
    pub max_servers: Option<u32>,
    pub min_servers: u32,
    /// `None`: derived (4 x cpu_count x threads_per_cpu, at most max_servers).
    pub servers_target: Option<u32>,
    pub degree_policy: DegreePolicy,
    pub degree_limit: DegreeLimit,
    /// `parallel_min_time_threshold`; `None` is `AUTO` (10 s).
    pub min_time_threshold: Option<Nanos>,
    pub force_local: bool,
    /// `instance_groups`: the groups this instance belongs to.
    pub instance_groups: Vec<String>,
    /// `parallel_instance_group`: where this instance's statements may place
    /// their servers; empty means every instance.
    pub instance_group: String,
    /// `parallel_execution_message_size`: bytes of one table-queue buffer.
    pub message_size: u32,
    /// `db_file_multiblock_read_count`: blocks one scan read asks for at most.
    pub multiblock_read_count: u32,
}

impl Default for PxParams {
    fn default() -> Self {
        PxParams {
            threads_per_cpu: 2,
            max_servers: None,
            min_servers: 0,
            servers_target: None,
            degree_policy: DegreePolicy::Manual,
            degree_limit: DegreeLimit::Cpu,
            min_time_threshold: None,
            force_local: false,
            instance_groups: Vec::new(),
            instance_group: String::new(),
            message_size: 16_384,
            multiblock_read_count: 128,
        }
    }
}

/// The most servers an instance may have (Oracle's range of `parallel_max_servers`).
pub const SERVERS_MAX: u32 = 3600;
/// `parallel_min_time_threshold = AUTO`.
pub const AUTO_TIME_THRESHOLD_NS: Nanos = 10 * NS_PER_S;

impl PxParams {
    /// Names the loader accepts, as a user writes them.
    pub const NAMES: &'static [&'static str] = &[
        "parallel_threads_per_cpu",
        "parallel_max_servers",
        "parallel_min_servers",
        "parallel_servers_target",
        "parallel_degree_policy",
        "parallel_degree_limit",
        "parallel_min_time_threshold",
        "parallel_force_local",
        "instance_groups",
        "parallel_instance_group",
        "parallel_execution_message_size",
        "db_file_multiblock_read_count",
    ];

    /// Those an administrator may change on a running instance (`alter system`).
    pub const PHASE_CHANGEABLE: &'static [&'static str] = &[
        "parallel_max_servers",
        "parallel_servers_target",
        "parallel_degree_policy",
        "parallel_degree_limit",
        "parallel_min_time_threshold",
        "parallel_force_local",
        "parallel_instance_group",
        "db_file_multiblock_read_count",
    ];

    /// `parallel_max_servers`, derived from `cpu_count` when not set.
    pub fn max_servers(&self, cpu_count: u32) -> u32 {
        self.max_servers
            .unwrap_or_else(|| (10 * cpu_count).min(SERVERS_MAX))
    }

    /// `parallel_servers_target`, derived when not set (never above `parallel_max_servers`).
    pub fn servers_target(&self, cpu_count: u32) -> u32 {
        let max = self.max_servers(cpu_count);
        self.servers_target
            .unwrap_or_else(|| 4 * cpu_count * self.threads_per_cpu)
            .min(max)
    }

    /// The DOP one instance offers: `cpu_count x parallel_threads_per_cpu`
    /// (the default DOP of one instance, and the `CPU` degree limit).
    pub fn cpu_dop(&self, cpu_count: u32) -> u32 {
        cpu_count.saturating_mul(self.threads_per_cpu).max(1)
    }

    /// `parallel_degree_limit` as a number.
    pub fn degree_limit(&self, cpu_count: u32) -> u32 {
        match self.degree_limit {
            DegreeLimit::Cpu => self.cpu_dop(cpu_count),
            DegreeLimit::Fixed(n) => n,
        }
    }

    pub fn min_time_threshold(&self) -> Nanos {
        self.min_time_threshold.unwrap_or(AUTO_TIME_THRESHOLD_NS)
    }

    /// Whether this instance belongs to `group` (an empty group is every instance).
    pub fn in_group(&self, group: &str) -> bool {
        group.is_empty()
            || self
                .instance_groups
                .iter()
                .any(|g| g.eq_ignore_ascii_case(group))
    }

    /// Set one parameter (its name lowercase) with the checks Oracle makes on the value alone.
    pub fn set(&mut self, name: &str, value: &ParamValue) -> Result<(), String> {
        let int = |min: u64, max: u64| -> Result<u32, String> {
            let n = match value {
                ParamValue::Int(n) => *n,
                ParamValue::Text(t) => parse_size(t)?,
            };
            if n < min || n > max {
                return Err(format!("value {n} out of range {min}..={max}"));
            }
            Ok(n as u32)
        };
        let text = || -> Result<String, String> {
            Ok(match value {
                ParamValue::Text(t) => t.trim().to_string(),
                ParamValue::Int(n) => n.to_string(),
            })
        };
        match name {
            "parallel_threads_per_cpu" => self.threads_per_cpu = int(1, 64)?,
            "parallel_max_servers" => self.max_servers = Some(int(0, u64::from(SERVERS_MAX))?),
            "parallel_min_servers" => self.min_servers = int(0, u64::from(SERVERS_MAX))?,
            "parallel_servers_target" => {
                self.servers_target = Some(int(0, u64::from(SERVERS_MAX))?)
            }
            "parallel_degree_policy" => {
                self.degree_policy = match text()?.to_ascii_uppercase().as_str() {
                    "MANUAL" => DegreePolicy::Manual,
                    "LIMITED" => DegreePolicy::Limited,
                    "AUTO" => DegreePolicy::Auto,
                    other => {
                        return Err(format!("expected MANUAL, LIMITED or AUTO, got `{other}`"));
                    }
                }
            }
            "parallel_degree_limit" => {
                self.degree_limit = match value {
                    ParamValue::Text(t) if t.trim().eq_ignore_ascii_case("CPU") => DegreeLimit::Cpu,
                    ParamValue::Text(t) if t.trim().eq_ignore_ascii_case("IO") => {
                        return Err(
                            "IO needs an I/O calibration, which is not modeled: use CPU or a number"
                                .into(),
                        );
                    }
                    _ => DegreeLimit::Fixed(
                        int(1, 4096)
                            .map_err(|e| format!("expected CPU or a degree 1..=4096 ({e})"))?,
                    ),
                }
            }
            "parallel_min_time_threshold" => {
                self.min_time_threshold = match value {
                    ParamValue::Text(t) if t.trim().eq_ignore_ascii_case("AUTO") => None,
                    ParamValue::Int(n) => Some(n.saturating_mul(NS_PER_S)),
                    ParamValue::Text(t) => {
                        let secs: f64 = t.trim().parse().map_err(|_| {
                            format!("expected AUTO or a number of seconds, got `{}`", t.trim())
                        })?;
                        if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
                            return Err(format!(
                                "expected AUTO or seconds in (0, 86400], got {secs}"
                            ));
                        }
                        Some((secs * NS_PER_S as f64).round() as Nanos)
                    }
                }
            }
            "parallel_force_local" => {
                self.force_local = match text()?.to_ascii_uppercase().as_str() {
                    "TRUE" | "1" => true,
                    "FALSE" | "0" => false,
                    other => return Err(format!("expected TRUE or FALSE, got `{other}`")),
                }
            }
            "instance_groups" => self.instance_groups = group_list(&text()?)?,
            "parallel_instance_group" => {
                let g = text()?.trim_matches('\'').to_string();
                if !g.is_empty() {
                    check_group_name(&g)?;
                }
                self.instance_group = g;
            }
            "parallel_execution_message_size" => self.message_size = int(2148, 65536)?,
            "db_file_multiblock_read_count" => self.multiblock_read_count = int(1, 1024)?,
            _ => return Err(format!("unknown parallel parameter `{name}`")),
        }
        Ok(())
    }

    /// Checks between parameters (Oracle's ranges that depend on another one).
    pub fn check(&self, cpu_count: u32) -> Result<(), (&'static str, String)> {
        let max = self.max_servers(cpu_count);
        if let Some(t) = self.servers_target
            && t > max
        {
            return Err((
                "parallel_servers_target",
                format!("parallel_servers_target = {t} exceeds parallel_max_servers = {max}"),
            ));
        }
        if self.min_servers > max {
            return Err((
                "parallel_min_servers",
                format!(
                    "parallel_min_servers = {} exceeds parallel_max_servers = {max}",
                    self.min_servers
                ),
            ));
        }
        Ok(())
    }
}

/// `'inst1','all','inst12'` or `inst1, all, inst12`.
fn group_list(text: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for part in text.split(',') {
        let g = part.trim().trim_matches('\'').trim();
        if g.is_empty() {
            if text.trim().is_empty() {
                return Ok(out);
            }
            return Err(format!("empty group name in `{text}`"));
        }
        check_group_name(g)?;
        if out.iter().any(|x| x.eq_ignore_ascii_case(g)) {
            return Err(format!("group `{g}` is listed twice"));
        }
        out.push(g.to_string());
    }
    Ok(out)
}

fn check_group_name(g: &str) -> Result<(), String> {
    if g.len() > 30
        || !g
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '#'))
    {
        return Err(format!(
            "`{g}` is not a group name (letters, digits, _ $ #, at most 30)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_t_series_table() {
        // Sun T5440: cpu_count 256, two threads per CPU.
        let p = PxParams::default();
        assert_eq!(p.max_servers(256), 2560);
        assert_eq!(p.servers_target(256), 2048);
        assert_eq!(p.degree_limit(256), 512);
        // A small node: the target never exceeds the maximum.
        let mut p = PxParams::default();
        p.set("parallel_max_servers", &ParamValue::Int(8)).unwrap();
        assert_eq!(p.servers_target(4), 8);
    }

    #[test]
    fn values_are_checked() {
        let mut p = PxParams::default();
        p.set(
            "instance_groups",
            &ParamValue::Text("'inst1','all', inst12".into()),
        )
        .unwrap();
        assert_eq!(p.instance_groups, ["inst1", "all", "inst12"]);
        assert!(p.in_group("INST12") && !p.in_group("inst2") && p.in_group(""));
        assert!(
            p.set("instance_groups", &ParamValue::Text("a,,b".into()))
                .is_err()
        );
        assert!(
            p.set("parallel_degree_policy", &ParamValue::Text("auto".into()))
                .is_ok()
        );
        assert_eq!(p.degree_policy, DegreePolicy::Auto);
        assert!(
            p.set(
                "parallel_degree_policy",
                &ParamValue::Text("sometimes".into())
            )
            .is_err()
        );
        assert!(
            p.set("parallel_degree_limit", &ParamValue::Text("IO".into()))
                .unwrap_err()
                .contains("calibration")
        );
        p.set(
            "parallel_min_time_threshold",
            &ParamValue::Text("0.5".into()),
        )
        .unwrap();
        assert_eq!(p.min_time_threshold(), NS_PER_S / 2);
        assert!(
            p.set("parallel_execution_message_size", &ParamValue::Int(100))
                .is_err()
        );
        p.set("parallel_servers_target", &ParamValue::Int(99))
            .unwrap();
        p.set("parallel_max_servers", &ParamValue::Int(64)).unwrap();
        assert_eq!(p.check(4).unwrap_err().0, "parallel_servers_target");
    }
}
