//! The loader's error messages, as a table. Each case breaks a small valid
//! file (`tests/data/*.toml`) in one place, with an edit, a `--set`, or both,
//! and lists every problem the loader must report, in the order it reports
//! them: where (the line, found by a text on it, and the column; a `--set`;
//! or nowhere), the key, and words of the message.

use fusion_scenario::load_str;

/// A small valid file the cases break in one place each.
const MIN: &str = include_str!("data/min.toml");
/// Two variants of MIN (appended to it).
const VARIANTS: &str = include_str!("data/variants.toml");
/// A `[tour]` for MIN (appended to it).
const TOUR: &str = include_str!("data/tour.toml");
/// Two sequences (appended to MIN).
const SEQUENCES: &str = include_str!("data/sequences.toml");
/// An expectation comparing MIN's two variants (appended after VARIANTS).
const EXPECT_VARIANTS: &str = include_str!("data/expect_variants.toml");
/// A `[tour]` with two `versus` figures, for MIN with VARIANTS.
const TOUR_VERSUS: &str = include_str!("data/tour_versus.toml");
/// Organisations, a partitioned table, a local index and a bitmap index.
const ORGS: &str = include_str!("data/orgs.toml");
/// Parallel queries and the parallel parameters.
const PX: &str = include_str!("data/px.toml");

/// MIN's only transaction's steps, replaced by cases about steps.
const MIN_STEPS: &str =
    "steps = [{ op = \"read\", table = \"t\", via = \"t_pk\" }, { op = \"commit\" }]";

/// Each case: its name, the file it breaks (`base`, MIN unless given), the
/// `edits` and `--set`s that break it, and every problem wanted, in order:
/// `at(text on the line, column, key, words)`, `at_nth(text, n, column, key,
/// words)`, `set(KEY=VALUE, key, words)` or `nowhere(key, words)`; a key of
/// "" is none; `.within(c)` when the key is followed by `(c)`; `.exactly()`
/// when the message is the one word.
#[rustfmt::skip]
const CASES: &[Case] = &[
    // ---- keys and values -------------------------------------------------
    Case {
        name: "unknown top-level key",
        edits: &[Append("\n[netwrok]\nlatency_us = 5\n")],
        want: &[at("[netwrok]", 2, "netwrok", &["unknown key `netwrok`", "did you mean `network`"])],
        ..CASE
    },
    Case {
        name: "unknown key in a fault",
        edits: &[Replace("workers = 4", "workers = 4\nwrokers = 5")],
        want: &[at("wrokers", 1, "phase[1].fault[0].wrokers", &["unknown key `wrokers`", "kind, instance, workers, load_pct"])],
        ..CASE
    },
    Case {
        name: "unknown key in an inline step",
        edits: &[Replace("via = \"t_pk\" }", "via = \"t_pk\", row = 3 }")],
        want: &[at("row = 3", 52, "workload[0].transaction[0].steps[0].row", &["unknown key `row`"])],
        ..CASE
    },
    Case {
        name: "string where an integer belongs",
        edits: &[Replace("sessions_per_instance = 2", "sessions_per_instance = \"two\"")],
        want: &[at("sessions_per_instance", 25, "workload[0].sessions_per_instance", &["expected an integer in 1..=60000, found \"two\""])],
        ..CASE
    },
    Case {
        name: "instance out of range in a fault",
        edits: &[Replace("instance = 2\nworkers", "instance = 3\nworkers")],
        want: &[at("instance = 3", 12, "phase[1].fault[0].instance", &["out of range 1..=2"])],
        ..CASE
    },
    Case {
        name: "instance out of range in parameters",
        edits: &[Append("\n[parameters.inst9]\ncpu_count = 8\n")],
        want: &[at("[parameters.inst9]", 13, "parameters.inst9", &["instance 9 is out of range 1..=2"])],
        ..CASE
    },
    Case {
        name: "instance out of range in a workload",
        edits: &[Replace("instances = [1, 2]", "instances = [1, 5]")],
        want: &[at("instances = [1, 5]", 17, "workload[0].instances[1]", &["instance 5 is out of range"])],
        ..CASE
    },
    Case {
        name: "instance listed twice in a workload",
        edits: &[Replace("instances = [1, 2]", "instances = [2, 2]")],
        want: &[at("instances = [2, 2]", 17, "workload[0].instances[1]", &["instance 2 is listed twice"])],
        ..CASE
    },
    Case {
        name: "negative latency in a fault",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"latency\"\ntarget = \"all\"\nlatency_ms = -2")],
        want: &[at("latency_ms = -2", 14, "phase[1].fault[1].latency_ms", &["expected a number >= 0, found -2"])],
        ..CASE
    },
    Case {
        name: "negative network latency",
        edits: &[Append("\n[network]\nlatency_us = -0.5\n")],
        want: &[at("latency_us", 14, "network.latency_us", &["found -0.5"])],
        ..CASE
    },
    Case {
        name: "TOML syntax error",
        edits: &[Replace("rows = 1000", "rows = 1000 1000")],
        want: &[at("rows = 1000 1000", 8, "", &["TOML syntax error"])],
        ..CASE
    },
    Case {
        name: "TOML syntax error: an unterminated string is reported where it starts",
        base: "[scenario]\nname = \"x\nx",
        want: &[at("name = ", 10, "", &["TOML syntax error"])],
        ..CASE
    },
    Case {
        name: "TOML syntax error: a duplicate key is named",
        base: "a = 1\na = 2\n",
        want: &[at("a = 2", 1, "", &["TOML syntax error: duplicate key `a`"])],
        ..CASE
    },
    Case {
        name: "duplicate phase names",
        edits: &[Replace("name = \"starved\"", "name = \"baseline\"")],
        want: &[at_nth("name = \"baseline\"", 2, 8, "phase[1].name", &["duplicate phase name `baseline` (first defined on line 27)"])],
        ..CASE
    },
    Case {
        name: "missing required key",
        edits: &[Replace("rows_per_block = 10\n", "")],
        want: &[at("[[table]]", 1, "table[0]", &["missing required key `rows_per_block`"])],
        ..CASE
    },
    Case {
        name: "missing required table",
        edits: &[Replace("[cluster]\ninstances = 2\n", "")],
        want: &[nowhere("", &["missing required table [cluster]"])],
        ..CASE
    },
    Case {
        name: "several problems are all reported in file order",
        edits: &[
            Replace("rows = 1000", "rows = 0"),
            Replace("duration_s = 10\n\n[[phase.fault]]", "duration_s = -1\n\n[[phase.fault]]"),
        ],
        want: &[
            at("rows = 0", 8, "table[0].rows", &["expected a positive integer, found 0"]),
            at("duration_s = -1", 14, "phase[1].duration_s", &["expected a number > 0, found -1"]),
        ],
        ..CASE
    },
    Case {
        name: "sessions that never let time pass",
        edits: &[
            Replace("sessions_per_instance = 2\n", "sessions_per_instance = 2\nthink_time_ms = 0\n"),
            Append("\n[costs]\nexecute_us = 0\nconsistent_get_us = 0\n"),
        ],
        want: &[at("think_time_ms = 0", 17, "workload[0].think_time_ms", &["without time passing"])],
        ..CASE
    },
    // ---- parameters --------------------------------------------------------
    Case {
        name: "parameters that need a restart cannot change in a phase",
        edits: &[Replace("[[phase.fault]]", "[phase.parameters]\ncpu_count = 2\n\n[[phase.fault]]")],
        want: &[at("cpu_count = 2", 1, "phase[1].parameters.cpu_count", &["needs an instance restart"])],
        ..CASE
    },
    Case {
        name: "bad parameter values",
        edits: &[Append("\n[parameters]\ncpu_count = -3\ndb_block_size = 3000\ncpu_cuont = 2\nlog_buffer = 1.5\n")],
        want: &[
            at("cpu_count = -3", 13, "parameters.cpu_count", &["expected a non-negative integer or text"]),
            at("db_block_size = 3000", 17, "parameters.db_block_size", &["db_block_size must be a power of two"]),
            at("cpu_cuont", 1, "parameters.cpu_cuont", &["unknown parameter `cpu_cuont`", "did you mean `cpu_count`"]),
            at("log_buffer", 14, "parameters.log_buffer", &["expected an integer or text"]),
        ],
        ..CASE
    },
    Case {
        name: "fast_start_mttr_target beyond Oracle's range",
        edits: &[Append("\n[parameters]\nfast_start_mttr_target = 3601\n")],
        want: &[at("fast_start_mttr_target", 26, "parameters.fast_start_mttr_target", &["value 3601 out of range 0..=3600"])],
        ..CASE
    },
    Case {
        name: "one instance's block size differs",
        edits: &[Append("\n[parameters.inst2]\ndb_block_size = 16384\n")],
        want: &[at("db_block_size", 17, "parameters.inst2.db_block_size", &["must be the same on every instance"])],
        ..CASE
    },
    // ---- [server]: inside one node -------------------------------------------
    Case {
        name: "unknown server key and bad server values",
        edits: &[Append("\n[server]\nlocality_groupz = 4\nthreads_per_core = 16\nlocal_latency_ns = 100\nremote_latency_ns = 50\nmemory = \"striped\"\nlink_bandwidth_mb_s = -5\n")],
        want: &[
            at("locality_groupz", 1, "server.locality_groupz", &["unknown key `locality_groupz`", "did you mean `locality_groups`"]),
            at("threads_per_core = 16", 20, "server.threads_per_core", &["expected at most 8, found 16", "UltraSPARC T2"]),
            at("remote_latency_ns = 50", 21, "server.remote_latency_ns", &["below local_latency_ns (100)"]),
            at("memory = \"striped\"", 10, "server.memory", &["unknown memory placement `striped`", "interleaved or first_touch"]),
            at("link_bandwidth_mb_s = -5", 23, "server.link_bandwidth_mb_s", &["expected a number > 0, found -5"]),
        ],
        ..CASE
    },
    Case {
        name: "DBWR's memory and slaves out of range",
        edits: &[Append("\n[server]\nio_lines_per_write = 2000\n\n[parameters]\ndbwr_io_slaves = 101\n\n[costs]\ndbwr_io_submit_us = -3\n")],
        want: &[
            at("io_lines_per_write = 2000", 22, "server.io_lines_per_write", &["expected at most 1,024, found 2000"]),
            at("dbwr_io_slaves = 101", 18, "parameters.dbwr_io_slaves", &["101 out of range 0..=100"]),
            at("dbwr_io_submit_us = -3", 21, "costs.dbwr_io_submit_us", &["expected a number >= 0, found -3"]),
        ],
        ..CASE
    },
    Case {
        name: "a phase's RMAN backup with bad values",
        edits: &[
            Replace("name = \"baseline\"\nduration_s = 10", "name = \"baseline\"\nduration_s = 10\nbackup = { channels = 0, section_size_mb = \"1M\", filesperset = 4 }"),
            Append("\n[costs]\nrman_block_us = -1\n"),
        ],
        want: &[
            at("channels = 0", 23, "phase[0].backup.channels", &["expected an integer in 1..=255, found 0"]),
            at("section_size_mb = \"1M\"", 44, "phase[0].backup.section_size_mb", &["found \"1M\""]),
            at("filesperset", 50, "phase[0].backup.filesperset", &["unknown key `filesperset`", "channels, section_size_mb"]),
            at("rman_block_us = -1", 17, "costs.rman_block_us", &["expected a number >= 0, found -1"]),
        ],
        ..CASE
    },
    Case {
        name: "a phase's checkpoint that is not a boolean",
        edits: &[Replace("name = \"baseline\"\nduration_s = 10", "name = \"baseline\"\nduration_s = 10\ncheckpoint = \"yes\"")],
        want: &[at("checkpoint = \"yes\"", 14, "phase[0].checkpoint", &["expected true or false, found \"yes\""])],
        ..CASE
    },
    Case {
        name: "too many locality groups",
        edits: &[Append("\n[server]\nlocality_groups = 65\n")],
        want: &[at("locality_groups = 65", 19, "server.locality_groups", &["expected at most 64, found 65"])],
        ..CASE
    },
    Case {
        name: "cpu_count that is not the server's",
        edits: &[Append("\n[parameters]\ncpu_count = 6\n\n[server]\nlocality_groups = 2\ncores_per_group = 4\n")],
        want: &[at("cpu_count = 6", 13, "parameters.cpu_count", &["cpu_count is 6 but [server] has 8 CPUs", "leave cpu_count out"])],
        ..CASE
    },
    Case {
        name: "a server with more CPUs than cpu_count allows",
        edits: &[Append("\n[server]\nlocality_groups = 64\ncores_per_group = 8\nthreads_per_core = 8\n")],
        want: &[at("[server]", 1, "server", &["the server has 4096 CPUs", "more than cpu_count allows (1024)"])],
        ..CASE
    },
    Case {
        name: "memory_writes without a server, and _enable_NUMA_support not a boolean",
        edits: &[
            Replace(MIN_STEPS, "steps = [{ op = \"memory_writes\", ops = 1000 }]"),
            Append("\n[parameters]\n_enable_NUMA_support = \"maybe\"\n"),
        ],
        want: &[
            at("memory_writes", 17, "workload[0].transaction[0].steps[0].op", &["needs a [server] description"]),
            at("_enable_NUMA_support", 24, "parameters._enable_NUMA_support", &["expected TRUE or FALSE, got `maybe`"]),
        ],
        ..CASE
    },
    Case {
        name: "an unknown node figure",
        edits: &[Append("\n[[expect]]\nname = \"n\"\nmetric = \"node:remote_share\"\nphase = \"baseline\"\nop = \">\"\nvalue = 1\n")],
        want: &[at("node:remote_share", 10, "expect[0].metric", &["unknown node figure `remote_share`", "remote_pct"])],
        ..CASE
    },
    // ---- steps, indexes, sequences --------------------------------------------
    Case {
        name: "unknown index in via",
        edits: &[Replace("via = \"t_pk\"", "via = \"t_ix\"")],
        want: &[at("t_ix", 44, "workload[0].transaction[0].steps[0].via", &["unknown index `t_ix` (indexes on `t`: t_pk"])],
        ..CASE
    },
    Case {
        name: "an update cannot full-scan",
        edits: &[Replace("op = \"read\", table = \"t\", via = \"t_pk\"", "op = \"update\", table = \"t\", via = \"full_scan\"")],
        want: &[at("full_scan", 46, "workload[0].transaction[0].steps[0].via", &["an update needs an index"])],
        ..CASE
    },
    Case {
        name: "index on another table",
        edits: &[
            Replace("[[index]]", "[[table]]\nname = \"u\"\nrows = 10\nrows_per_block = 10\n\n[[index]]\nname = \"u_pk\"\ntable = \"u\"\n\n[[index]]"),
            Replace("via = \"t_pk\"", "via = \"u_pk\""),
        ],
        want: &[at("via = \"u_pk\"", 44, "workload[0].transaction[0].steps[0].via", &["index `u_pk` is on `u`, not on `t`"])],
        ..CASE
    },
    Case {
        name: "unknown sequence in a step",
        edits: &[
            Replace(MIN_STEPS, "steps = [{ op = \"nextval\", sequence = \"nope\" }]"),
            Append(SEQUENCES),
        ],
        want: &[at("sequence = \"nope\"", 39, "workload[0].transaction[0].steps[0].sequence", &["unknown sequence `nope` (sequences: s, o)"])],
        ..CASE
    },
    Case {
        name: "sequence cache below 2",
        edits: &[
            Replace(MIN_STEPS, "steps = [{ op = \"commit\" }]"),
            Append(SEQUENCES),
            Replace("cache = 1000", "cache = 1"),
        ],
        want: &[at("cache = 1", 9, "sequence[1].cache", &["expected an integer in 2..="])],
        ..CASE
    },
    Case {
        name: "sequence order not a boolean",
        edits: &[
            Replace(MIN_STEPS, "steps = [{ op = \"commit\" }]"),
            Append(SEQUENCES),
            Replace("order = true", "order = \"yes\""),
        ],
        want: &[at("order = ", 9, "sequence[1].order", &["expected true or false"])],
        ..CASE
    },
    Case {
        name: "reverse not a boolean",
        edits: &[Replace("table = \"t\"\n\n[[workload]]", "table = \"t\"\nreverse = 1\n\n[[workload]]")],
        want: &[at("reverse = 1", 11, "index[0].reverse", &["expected true or false, found"])],
        ..CASE
    },
    Case {
        name: "misspelt reverse",
        edits: &[Replace("table = \"t\"\n\n[[workload]]", "table = \"t\"\nreversed = true\n\n[[workload]]")],
        want: &[at("reversed", 1, "index[0].reversed", &["unknown key `reversed`", "did you mean `reverse`?"])],
        ..CASE
    },
    // ---- faults ----------------------------------------------------------------
    Case {
        name: "unknown fault kind",
        edits: &[Replace("kind = \"stress_cpu\"", "kind = \"stress_mem\"")],
        want: &[at("stress_mem", 8, "phase[1].fault[0].kind", &["\"stress_cpu\", \"disk_latency\", \"latency\", \"bandwidth\", \"kill\", \"restart\", \"pause\", \"loss\", \"partition\""])],
        ..CASE
    },
    Case {
        name: "a pause without its duration",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"pause\"\ninstance = 2")],
        want: &[at_nth("[[phase.fault]]", 2, 1, "phase[1].fault[1]", &["missing required key `duration_s`"])],
        ..CASE
    },
    Case {
        name: "a pause of an instance the cluster does not have",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"pause\"\ninstance = 7\nduration_s = 1")],
        want: &[at("instance = 7", 12, "phase[1].fault[1].instance", &["7"])],
        ..CASE
    },
    Case {
        name: "a pause that starts after its phase ends",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"pause\"\ninstance = 2\nat_s = 12\nduration_s = 1")],
        want: &[at("at_s = 12", 8, "phase[1].fault[1].at_s", &["at_s = 12 s is not inside the phase (duration_s = 10 s)"])],
        ..CASE
    },
    Case {
        name: "a loss above 100 %",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"loss\"\ntarget = \"all\"\nloss_pct = 150")],
        want: &[at("loss_pct = 150", 12, "phase[1].fault[1].loss_pct", &["expected a percentage in 0..=100, found 150"])],
        ..CASE
    },
    Case {
        name: "a partition in an unknown direction",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"partition\"\ntarget = { instance = 2 }\ndirection = \"sideways\"")],
        want: &[at("direction", 13, "phase[1].fault[1].direction", &["expected \"both\", \"to\" or \"from\", found \"sideways\""])],
        ..CASE
    },
    Case {
        name: "a negative at_s",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"pause\"\ninstance = 2\nat_s = -1\nduration_s = 1")],
        want: &[at("at_s = -1", 8, "phase[1].fault[1].at_s", &["-1"])],
        ..CASE
    },
    Case {
        name: "a link joins two different instances",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"bandwidth\"\ntarget = { from = 1, to = 1 }\nrate_mbps = 10")],
        want: &[at("target = ", 10, "phase[1].fault[1].target", &["two different instances"])],
        ..CASE
    },
    Case {
        name: "a key of another fault kind",
        edits: &[Replace("workers = 4", "workers = 4\nlatency_ms = 3")],
        want: &[at("latency_ms = 3", 1, "phase[1].fault[0].latency_ms", &["unknown key"])],
        ..CASE
    },
    // ---- expectations ----------------------------------------------------------
    Case {
        name: "unknown phase in an expectation",
        edits: &[Append("\n[[expect]]\nname = \"e\"\nmetric = \"stat:gc cr blocks received\"\nphase = \"starvd\"\nop = \">\"\nvalue = 0\n")],
        want: &[at("phase = \"starvd\"", 9, "expect[0].phase", &["unknown phase `starvd` (phases: baseline, starved)"])],
        ..CASE
    },
    Case {
        name: "unknown phase in an expectation's than",
        edits: &[Append("\n[[expect]]\nname = \"e\"\nmetric = \"stat:gc cr blocks received\"\nphase = \"starved\"\nop = \">\"\nthan = { phase = \"nope\" }\n")],
        want: &[at("than", 18, "expect[0].than.phase", &["unknown phase `nope`"])],
        ..CASE
    },
    Case {
        name: "unknown statistic",
        edits: &[Append("\n[[expect]]\nname = \"e\"\nmetric = \"stat:no such statistic\"\nphase = \"starved\"\nop = \">\"\nvalue = 0\n")],
        want: &[at("metric", 10, "expect[0].metric", &["unknown v$sysstat statistic `no such statistic`"])],
        ..CASE
    },
    Case {
        name: "unknown recovery figure",
        edits: &[Append("\n[[expect]]\nname = \"e\"\nmetric = \"recovery:downtime_ms\"\nphase = \"starved\"\nop = \"<\"\nvalue = 0\n")],
        want: &[at("metric", 10, "expect[0].metric", &["unknown recovery figure `downtime_ms`", "recovery_ms", "brownout_ms"])],
        ..CASE
    },
    Case {
        name: "unknown metric",
        edits: &[Append("\n[[expect]]\nname = \"e\"\nmetric = \"Avg global cache fast block time\"\nphase = \"starved\"\nop = \">\"\nvalue = 0\n")],
        want: &[at("metric", 10, "expect[0].metric", &["unknown metric"])],
        ..CASE
    },
    Case {
        name: "unknown variant in an expectation's than",
        edits: &[
            Append(VARIANTS),
            Append(EXPECT_VARIANTS),
            Replace("variant = \"ts-lms\"", "variant = \"ts\""),
        ],
        want: &[at("variant = \"ts\"", 20, "expect[0].than.variant", &["unknown variant `ts` (variants: ts-lms, rt-lms)"])],
        ..CASE
    },
    Case {
        name: "an expectation's instance out of range in a variant",
        edits: &[Append(VARIANTS), Append(EXPECT_VARIANTS), Replace("instance = 1\nop", "instance = 3\nop")],
        want: &[at("instance = 3", 12, "expect[0].instance", &["instance 3 is out of range 1..=2 in variant `rt-lms`"])],
        ..CASE
    },
    Case {
        name: "an expectation with both than and value",
        edits: &[Append(VARIANTS), Append(EXPECT_VARIANTS), Replace("than = {", "value = 1\nthan = {")],
        want: &[at("value = 1", 1, "expect[0].value", &["give either `than` or `value`, not both"])],
        ..CASE
    },
    // ---- limits: what the model stores in fixed-width types, and knobs capped ----
    Case {
        name: "limits: a table's rows beyond 40-bit keys",
        edits: &[Replace("rows = 1000", "rows = 1099511627777")],
        want: &[at("rows = 1099511627777", 8, "table[0].rows", &["expected at most 1,099,511,627,776, found 1099511627777", "keys are 40-bit"])],
        ..CASE
    },
    Case {
        name: "limits: rows one to a block beyond 32-bit block addresses (issue 14, layout.rs:332)",
        set: &["table.0.rows=4294967296", "table.0.rows_per_block=1"],
        want: &[set("table.0.rows=4294967296", "table[0].rows", &["table `t` needs 4,294,967,809 blocks (4,294,967,297 for 4,294,967,296 rows at rows_per_block = 1, 512 free for 2 instances)", "block addresses are 32-bit: at most 4,294,967,295"])],
        ..CASE
    },
    Case {
        name: "limits: free blocks per instance beyond 32-bit block addresses (issue 14, cache.rs:261)",
        set: &["table.0.free_blocks_per_instance=2147483648"],
        want: &[set("table.0.free_blocks_per_instance=2147483648", "table[0].free_blocks_per_instance", &["table `t` needs 4,294,967,397 blocks", "4,294,967,296 free for 2 instances", "at most 4,294,967,295"])],
        ..CASE
    },
    Case {
        name: "limits: free blocks that wrapped around to a wrong model (issue 14)",
        edits: &[Replace("rows_per_block = 10\n", "rows_per_block = 10\nfree_blocks_per_instance = 4294967295\n")],
        want: &[at("free_blocks_per_instance", 28, "table[0].free_blocks_per_instance", &["table `t` needs 8,589,934,691 blocks", "block addresses are 32-bit"])],
        ..CASE
    },
    Case {
        name: "limits: an index's split blocks beyond 32-bit block addresses",
        set: &["index.t_pk.free_blocks_per_instance=4294967295"],
        want: &[set("index.t_pk.free_blocks_per_instance=4294967295", "index[0].free_blocks_per_instance", &["index `t_pk` needs 8,589,934,595 blocks (5 for 1,000 entries at 250 per leaf, 8,589,934,590 free)", "block addresses are 32-bit"])],
        ..CASE
    },
    Case {
        name: "limits: an index's leaves beyond 32-bit block addresses, at the index",
        set: &["table.0.rows=1099511627776", "table.0.rows_per_block=1000"],
        want: &[at("[[index]]", 1, "index[0]", &["index `t_pk` needs 4,415,709,481 blocks (4,415,709,353 for 1,099,511,627,776 entries at 250 per leaf, 128 free)", "at most 4,294,967,295"])],
        ..CASE
    },
    Case {
        name: "limits: bitmap chunks beyond 32-bit chunk numbers",
        base: ORGS,
        set: &["table.s.rows=1099511627776", "table.s.rows_per_block=1000", "index.s_pk.entries_per_leaf=10000"],
        want: &[at("rows_per_piece = 100", 18, "index[2].rows_per_piece", &["make 10,995,116,278 chunks", "a piece's chunk number is 32-bit"])],
        ..CASE
    },
    Case {
        name: "limits: entries per leaf (issue 14: quadratic)",
        edits: &[Replace("table = \"t\"\n\n[[workload]]", "table = \"t\"\nentries_per_leaf = 1000000\n\n[[workload]]")],
        want: &[at("entries_per_leaf", 20, "index[0].entries_per_leaf", &["expected at most 10,000, found 1000000", "every copy of a block copies all of them"])],
        ..CASE
    },
    Case {
        name: "limits: entries per branch",
        set: &["index.0.entries_per_branch=10001"],
        want: &[set("index.0.entries_per_branch=10001", "index[0].entries_per_branch", &["expected at most 10,000, found 10001"])],
        ..CASE
    },
    Case {
        name: "limits: a key range beyond 40-bit keys",
        edits: &[Replace("via = \"t_pk\" }", "via = \"t_pk\", keys = { dist = \"sequential\", range = [1, 1099511627777] } }")],
        want: &[at("1099511627777", 94, "workload[0].transaction[0].steps[0].keys.range[1]", &["expected at most 1,099,511,627,776", "keys are 40-bit"])],
        ..CASE
    },
    Case {
        name: "limits: sessions of one workload (issue 14)",
        set: &["workload.w.sessions_per_instance=60001"],
        want: &[set("workload.w.sessions_per_instance=60001", "workload[0].sessions_per_instance", &["expected at most 60,000, found 60001", "pin count is 16-bit"])],
        ..CASE
    },
    Case {
        name: "limits: sessions of several workloads on one instance",
        edits: &[
            Replace("sessions_per_instance = 2", "sessions_per_instance = 40000"),
            Append("\n[[workload]]\nname = \"w2\"\ninstances = [2]\nsessions_per_instance = 30000\n\n[[workload.transaction]]\nsteps = [{ op = \"commit\" }]\n"),
        ],
        want: &[at("sessions_per_instance = 30000", 25, "workload[1].sessions_per_instance", &["instance 2 would run 70,000 sessions with workload `w2`'s", "at most 60,000 per instance"])],
        ..CASE
    },
    Case {
        name: "limits: CPU hogs of a fault",
        edits: &[Replace("workers = 4", "workers = 10001")],
        want: &[at("workers = 10001", 11, "phase[1].fault[0].workers", &["expected at most 10,000, found 10001", "grows with the square of the hogs"])],
        ..CASE
    },
    Case {
        name: "limits: a phase longer than a day (issue 14)",
        edits: &[Replace("duration_s = 10\n\n[[phase.fault]]", "duration_s = 1e9\n\n[[phase.fault]]")],
        want: &[at("duration_s = 1e9", 14, "phase[1].duration_s", &["expected at most 86400 (one day), found 1000000000.0"])],
        ..CASE
    },
    Case {
        name: "limits: phases that add up to more than a day",
        edits: &[Replace("duration_s = 10\n", "duration_s = 50000\n")],
        want: &[at_nth("duration_s = 50000", 2, 14, "phase[1].duration_s", &["the phases up to this one last 100000 s; the timeline may last at most 86400 s (one day)"])],
        ..CASE
    },
    Case {
        name: "limits: a CPU cost above a second",
        edits: &[Append("\n[costs]\nexecute_us = 1000001\ntime_slice_ms = 1001\n")],
        want: &[
            at("execute_us", 14, "costs.execute_us", &["expected at most 1000000 (one second), found 1000001", "costs are multiplied by counts"]),
            at("time_slice_ms", 17, "costs.time_slice_ms", &["expected at most 1000 (one second), found 1001"]),
        ],
        ..CASE
    },
    Case {
        name: "limits: a CPU cost per row above a millisecond",
        edits: &[Append("\n[costs]\nrow_examined_us = 1001\n")],
        want: &[at("row_examined_us", 19, "costs.row_examined_us", &["expected at most 1000 (one millisecond), found 1001", "per-row costs are multiplied by a table's rows"])],
        ..CASE
    },
    Case {
        name: "limits: an interconnect slower than 1 Mbit/s",
        edits: &[Append("\n[network]\nbandwidth_mbps = 0.5\n")],
        want: &[at("bandwidth_mbps", 18, "network.bandwidth_mbps", &["0.5 is below the slowest link the model runs, 1 Mbit/s"])],
        ..CASE
    },
    Case {
        name: "limits: a bandwidth fault slower than 1 Mbit/s",
        edits: &[Replace("workers = 4", "workers = 4\n\n[[phase.fault]]\nkind = \"bandwidth\"\ntarget = \"all\"\nrate_mbps = 0.001")],
        want: &[at("rate_mbps = 0.001", 13, "phase[1].fault[1].rate_mbps", &["is below the slowest link the model runs, 1 Mbit/s"])],
        ..CASE
    },
    Case {
        name: "limits: a GCS message above 64 KB",
        edits: &[Append("\n[network]\nmessage_bytes = 65537\n")],
        want: &[at("message_bytes", 17, "network.message_bytes", &["expected at most 65,536, found 65537", "the largest UDP datagram"])],
        ..CASE
    },
    // ---- --set -------------------------------------------------------------------
    Case {
        name: "--set of a missing element",
        set: &["phase.warmup.duration_s=5"],
        want: &[set("phase.warmup.duration_s=5", "", &["`phase` has no element named or numbered `warmup` (elements: 0 = baseline, 1 = starved)"])],
        ..CASE
    },
    Case {
        name: "--set of a missing element by number",
        set: &["phase.7.fault.0.workers=5"],
        want: &[set("phase.7.fault.0.workers=5", "", &["numbered `7`"])],
        ..CASE
    },
    Case {
        name: "--set of a missing nested element",
        set: &["phase.1.fault.3.workers=5"],
        want: &[set("phase.1.fault.3.workers=5", "", &["`phase[1].fault` has no element named or numbered `3` (elements: 0)"])],
        ..CASE
    },
    Case {
        name: "--set through a value that is not a table",
        set: &["cluster.instances.x=5"],
        want: &[set("cluster.instances.x=5", "", &["`cluster.instances` is 2, not a table"])],
        ..CASE
    },
    Case {
        name: "--set without an equals sign",
        set: &["no equals sign"],
        want: &[set("no equals sign", "", &["expected KEY=VALUE"])],
        ..CASE
    },
    Case {
        name: "--set with an empty key segment",
        set: &["phase..x=1"],
        want: &[set("phase..x=1", "", &["empty key segment"])],
        ..CASE
    },
    Case {
        name: "--set of a value of the wrong type",
        set: &["phase.starved.fault.0.workers=many"],
        want: &[set("phase.starved.fault.0.workers=many", "phase[1].fault[0].workers", &["expected an integer in 1..=10000, found \"many\""]).exactly()],
        ..CASE
    },
    Case {
        name: "--set of a value out of range",
        set: &["phase.1.fault.0.workers=-3"],
        want: &[set("phase.1.fault.0.workers=-3", "phase[1].fault[0].workers", &["expected an integer in 1..=10000, found -3"])],
        ..CASE
    },
    Case {
        name: "--set of an unknown key",
        set: &["network.latncy_us=5"],
        want: &[set("network.latncy_us=5", "network.latncy_us", &["unknown key"])],
        ..CASE
    },
    // ---- variants -----------------------------------------------------------------
    Case {
        name: "a variant's bad value points at the variant",
        edits: &[Append(VARIANTS), Replace("fault.0.workers\" = 32", "fault.0.workers\" = -32")],
        want: &[at("-32", 99, "phase[1].fault[0].workers", &["expected an integer in 1..=10000, found -32"]).within("set by variant `rt-lms`").exactly()],
        ..CASE
    },
    Case {
        name: "a variant's path that does not resolve",
        edits: &[
            Append(VARIANTS),
            Replace("phase.starved.fault.0.workers\" = 8", "phase.hungry.fault.0.workers\" = 8"),
        ],
        want: &[at("phase.hungry", 65, "variant[0].set.\"phase.hungry.fault.0.workers\"", &["`phase` has no element named or numbered `hungry`"]).within("variant `ts-lms`")],
        ..CASE
    },
    Case {
        name: "a problem only one variant has says which",
        edits: &[Append("\n[[variant]]\nname = \"one\"\nset = { \"cluster.instances\" = 1 }\n\n[[variant]]\nname = \"two\"\n")],
        want: &[
            at("instances = [1, 2]", 17, "workload[0].instances[1]", &["instance 2 is out of range 1..=1"]).within("in variant `one`"),
            at_nth("instance = 2", 2, 12, "phase[1].fault[0].instance", &["instance 2 is out of range 1..=1"]).within("in variant `one`"),
        ],
        ..CASE
    },
    Case {
        name: "a variant may not change expectations",
        edits: &[Append("\n[[variant]]\nname = \"x\"\nset = { \"expect.0.factor\" = 1 }\n")],
        want: &[at("expect.0.factor", 9, "variant[0].set.\"expect.0.factor\"", &["a variant may change only the run configuration", "not `expect`"])],
        ..CASE
    },
    // ---- [tour] -----------------------------------------------------------------------
    Case {
        name: "tour: unknown key",
        edits: &[Append(TOUR), Replace("label =", "lable =")],
        want: &[
            at("[tour]", 1, "tour", &["missing required key `label`"]),
            at("lable", 1, "tour.lable", &["unknown key `lable` (valid here: order, part, measured, versus, label, deck; did you mean `label`?)"]),
        ],
        ..CASE
    },
    Case {
        name: "tour: unknown key in measured",
        edits: &[Append(TOUR), Replace("instance = 1 }", "instance = 1, node = 2 }")],
        want: &[at("node = 2", 103, "tour.measured.node", &["unknown key `node` (valid here: metric, phase, instance, variant)"])],
        ..CASE
    },
    Case {
        name: "tour: unknown phase",
        edits: &[Append(TOUR), Replace("phase = \"starved\"", "phase = \"starvd\"")],
        want: &[at("starvd", 78, "tour.measured.phase", &["unknown phase `starvd` (phases: baseline, starved)"])],
        ..CASE
    },
    Case {
        name: "tour: instance out of range",
        edits: &[Append(TOUR), Replace("instance = 1 }", "instance = 3 }")],
        want: &[at("instance = 3", 100, "tour.measured.instance", &["instance 3 is out of range 1..=2"])],
        ..CASE
    },
    Case {
        name: "tour: unknown variant",
        edits: &[Append(TOUR), Replace("instance = 1 }", "instance = 1, variant = \"x\" }")],
        want: &[at("variant = \"x\"", 113, "tour.measured.variant", &["unknown variant `x` (variants: mini (the file has no [[variant]]))"])],
        ..CASE
    },
    Case {
        name: "tour: negative order",
        edits: &[Append(TOUR), Replace("order = 1", "order = -1")],
        want: &[at("order = -1", 9, "tour.order", &["expected a non-negative integer, found -1"])],
        ..CASE
    },
    Case {
        name: "tour: missing order",
        edits: &[Append(TOUR), Replace("order = 1\n", "")],
        want: &[at("[tour]", 1, "tour", &["missing required key `order`"])],
        ..CASE
    },
    Case {
        name: "tour: deck on two lines",
        edits: &[Append(TOUR), Replace("63.3 ms", "63.3\\nms")],
        want: &[at("deck", 8, "tour.deck", &["expected a non-empty string on one line"])],
        ..CASE
    },
    Case {
        name: "tour: unknown metric",
        edits: &[Append(TOUR), Replace("Avg global cache cr", "Avg global cash cr")],
        want: &[at("measured", 23, "tour.measured.metric", &["unknown metric"])],
        ..CASE
    },
    Case {
        name: "tour: measured not a table",
        edits: &[Append("\n[tour]\norder = 1\nlabel = \"l\"\ndeck = \"d\"\nmeasured = 3\n")],
        want: &[at("measured = 3", 12, "tour.measured", &["expected a table, found 3"])],
        ..CASE
    },
    Case {
        name: "tour: a variant may not change it",
        edits: &[Append(TOUR), Append("\n[[variant]]\nname = \"v\"\nset = { \"tour.order\" = 2 }\n")],
        want: &[at("tour.order", 9, "variant[0].set.\"tour.order\"", &["a variant may change only the run configuration", "not `tour`"])],
        ..CASE
    },
    Case {
        name: "tour: unknown variant in versus",
        edits: &[
            Append(VARIANTS),
            Append(TOUR_VERSUS),
            Replace("variant = \"rt-lms\"", "variant = \"nope\""),
        ],
        want: &[at("versus", 23, "tour.versus[0].variant", &["unknown variant `nope`"])],
        ..CASE
    },
    Case {
        name: "tour: unknown phase in versus",
        edits: &[Append(VARIANTS), Append(TOUR_VERSUS), Replace("phase = \"baseline\"", "phase = \"later\"")],
        want: &[at("versus", 45, "tour.versus[1].phase", &["unknown phase `later`"])],
        ..CASE
    },
    // ---- organisations, partitions, bitmap indexes --------------------------------
    Case {
        name: "partitioning by org without orgs",
        base: ORGS,
        edits: &[Replace("orgs = 2\n", "")],
        want: &[
            at("partition_by", 16, "table[0].partition_by", &["partitioning by org needs `orgs` >= 2"]),
            at("local = true", 9, "index[0].local", &["a local index needs a partitioned table"]),
            at("op = \"read\", table = \"t\"", 51, "workload[0].transaction[0].steps[0].org", &["table `t` has one organisation"]),
            at("op = \"update\", table = \"t\"", 53, "workload[0].transaction[0].steps[1].org", &["table `t` has one organisation"]),
        ],
        ..CASE
    },
    Case {
        name: "unknown partitioning column",
        base: ORGS,
        edits: &[Replace("partition_by = \"org\"", "partition_by = \"region\"")],
        want: &[
            at("partition_by", 16, "table[0].partition_by", &["unknown partitioning column `region`"]),
            at("local = true", 9, "index[0].local", &["a local index needs a partitioned table"]),
        ],
        ..CASE
    },
    Case {
        name: "org out of range",
        base: ORGS,
        set: &["workload.w.transaction.batch.steps.0.org=3"],
        want: &[set("workload.w.transaction.batch.steps.0.org=3", "workload[0].transaction[0].steps[0].org", &["1..=2"])],
        ..CASE
    },
    Case {
        name: "org on a table of one organisation",
        base: ORGS,
        set: &["workload.w.transaction.batch.steps.3.org=1"],
        want: &[set("workload.w.transaction.batch.steps.3.org=1", "workload[0].transaction[0].steps[3].org", &["table `s` has one organisation"])],
        ..CASE
    },
    Case {
        name: "insert into a partitioned table",
        base: ORGS,
        edits: &[Replace("{ op = \"commit\" },", "{ op = \"insert\", table = \"t\" },\n  { op = \"commit\" },")],
        want: &[at("op = \"insert\"", 28, "workload[0].transaction[0].steps[4].table", &["inserts into `t` are not modelled: it is partitioned"])],
        ..CASE
    },
    Case {
        name: "a local index on (val) only",
        base: ORGS,
        set: &["index.t_kv.columns=[\"val\"]"],
        want: &[set("index.t_kv.columns=[\"val\"]", "index[0].columns", &["expected [\"key\"] or [\"key\", \"val\"]"])],
        ..CASE
    },
    Case {
        name: "bitmap index on a table without values",
        base: ORGS,
        edits: &[Replace("distinct_values = 4\n", "")],
        want: &[
            at("kind = \"bitmap\"", 8, "index[2].kind", &["a bitmap index is on the value column: give table `s` `distinct_values`"]),
            at("op = \"count\"", 55, "workload[0].transaction[0].steps[2].values", &["values go up to 0 on `s`"]),
        ],
        ..CASE
    },
    Case {
        name: "an update through a bitmap index",
        base: ORGS,
        set: &["workload.w.transaction.batch.steps.3.via=\"s_bm\""],
        want: &[set("workload.w.transaction.batch.steps.3.via=\"s_bm\"", "workload[0].transaction[0].steps[3].via", &["`s_bm` is a bitmap index: it answers `count` steps"])],
        ..CASE
    },
    Case {
        name: "a count through a B-tree index",
        base: ORGS,
        set: &["workload.w.transaction.batch.steps.2.via=\"s_pk\""],
        want: &[set("workload.w.transaction.batch.steps.2.via=\"s_pk\"", "workload[0].transaction[0].steps[2].via", &["a count goes through a bitmap index on `s` (bitmap indexes: s_bm)"])],
        ..CASE
    },
    Case {
        name: "count values beyond distinct_values",
        base: ORGS,
        set: &["workload.w.transaction.batch.steps.2.values.range=[1, 9]"],
        want: &[at("op = \"count\"", 55, "workload[0].transaction[0].steps[2].values", &["values go up to 4 on `s`", "range ends at 9"])],
        ..CASE
    },
    Case {
        name: "several rows of a bitmap-indexed table in one transaction",
        base: ORGS,
        set: &["workload.w.transaction.batch.steps.3.rows=2"],
        want: &[at("steps = [", 9, "workload[0].transaction[0].steps", &["a transaction updates 2 rows of `s`, which has a bitmap index: one row per transaction"])],
        ..CASE
    },
    Case {
        name: "insert into a bitmap-indexed table",
        base: ORGS,
        edits: &[Replace("{ op = \"commit\" },", "{ op = \"insert\", table = \"s\" },\n  { op = \"commit\" },")],
        want: &[at("op = \"insert\"", 28, "workload[0].transaction[0].steps[4].table", &["inserts into `s` are not modelled: it is indexed by a bitmap index"])],
        ..CASE
    },
    Case {
        name: "rows_per_piece on a B-tree index",
        base: ORGS,
        set: &["index.s_pk.rows_per_piece=5"],
        want: &[set("index.s_pk.rows_per_piece=5", "index[1].rows_per_piece", &["`rows_per_piece` applies only to kind = \"bitmap\""])],
        ..CASE
    },
    Case {
        name: "unknown index kind",
        base: ORGS,
        set: &["index.s_bm.kind=\"hash\""],
        want: &[
            set("index.s_bm.kind=\"hash\"", "index[2].kind", &["unknown index kind `hash`"]),
            at("rows_per_piece", 18, "index[2].rows_per_piece", &["applies only to kind = \"bitmap\""]),
            at("op = \"count\"", 38, "workload[0].transaction[0].steps[2].via", &["(bitmap indexes: none defined)"]),
        ],
        ..CASE
    },
    // ---- parallel query --------------------------------------------------------------
    Case {
        name: "px: misspelt plan",
        base: PX,
        edits: &[Replace("plan = \"scan_aggregate\"", "plan = \"scan_agregate\"")],
        want: &[at("scan_agregate", 8, "query[1].plan", &["did you mean `scan_aggregate`"])],
        ..CASE
    },
    Case {
        name: "px: too few tables for the plan",
        base: PX,
        edits: &[Replace("tables = [\"t1\", \"t2\"]", "tables = [\"t1\"]")],
        want: &[at("tables = [\"t1\"]", 10, "query[0].tables", &["reads 2 tables, found 1"])],
        ..CASE
    },
    Case {
        name: "px: unknown table",
        base: PX,
        edits: &[Replace("tables = [\"t1\", \"t2\"]", "tables = [\"t1\", \"t9\"]")],
        want: &[at("\"t9\"", 17, "query[0].tables[1]", &["unknown table `t9`"])],
        ..CASE
    },
    Case {
        name: "px: degree 0",
        base: PX,
        edits: &[Replace("degree = 16", "degree = 0")],
        want: &[at("degree = 0", 10, "query[0].degree", &["1..=4096"])],
        ..CASE
    },
    Case {
        name: "px: degree not a number",
        base: PX,
        edits: &[Replace("degree = 16", "degree = \"lots\"")],
        want: &[at("\"lots\"", 10, "query[0].degree", &["\"default\""])],
        ..CASE
    },
    Case {
        name: "px: distribution of another plan",
        base: PX,
        edits: &[Replace("instances = 2", "instances = 2\ndistribution = \"hash\"")],
        want: &[at("distribution", 1, "query[1].distribution", &["applies to plan \"hash_join_group_by\" only"])],
        ..CASE
    },
    Case {
        name: "px: instances with the default degree",
        base: PX,
        edits: &[Replace("degree = 8\ninstances = 2", "degree = \"default\"\ninstances = 2")],
        want: &[at("instances = 2", 1, "query[1].instances", &["does not apply"])],
        ..CASE
    },
    Case {
        name: "px: unknown key",
        base: PX,
        edits: &[Replace("group_by_mod = 100", "group_by_mod = 100\ncolour = 1")],
        want: &[at("colour", 1, "query[0].colour", &["unknown key `colour`"])],
        ..CASE
    },
    Case {
        name: "px: a step names an unknown query",
        base: PX,
        edits: &[Replace("query = \"sql2\"", "query = \"sql9\"")],
        want: &[at("sql9", 43, "workload[0].transaction[0].steps[0].query", &["unknown query `sql9` (queries: sql2, agg)"])],
        ..CASE
    },
    Case {
        name: "px: a table a workload changes cannot be read in parallel",
        base: PX,
        edits: &[Replace("steps = [{ op = \"parallel_query\", query = \"sql2\" }]", "steps = [{ op = \"parallel_query\", query = \"sql2\" }, { op = \"insert\", table = \"t2\" }]")],
        want: &[at("tables = [\"t1\", \"t2\"]", 10, "query[0].tables", &["table `t2` is changed by workload `w`"])],
        ..CASE
    },
    Case {
        name: "px: servers target above the maximum",
        base: PX,
        edits: &[Replace("parallel_execution_message_size = 2148", "parallel_execution_message_size = 2148\nparallel_max_servers = 8\nparallel_servers_target = 9")],
        want: &[
            nowhere("parameters.parallel_servers_target", &["instance 1: parallel_servers_target = 9 exceeds parallel_max_servers = 8"]),
            nowhere("parameters.parallel_servers_target", &["instance 2: parallel_servers_target = 9 exceeds parallel_max_servers = 8"]),
            nowhere("parameters.parallel_servers_target", &["instance 3: parallel_servers_target = 9 exceeds parallel_max_servers = 8"]),
            nowhere("phase[0].parameters.parallel_servers_target", &["phase `run`, instance 1: parallel_servers_target = 9"]),
            nowhere("phase[0].parameters.parallel_servers_target", &["phase `run`, instance 2: parallel_servers_target = 9"]),
            nowhere("phase[0].parameters.parallel_servers_target", &["phase `run`, instance 3: parallel_servers_target = 9"]),
        ],
        ..CASE
    },
    Case {
        name: "px: unknown degree policy",
        base: PX,
        edits: &[Replace("cpu_count = 4", "cpu_count = 4\nparallel_degree_policy = \"sometimes\"")],
        want: &[at("sometimes", 26, "parameters.parallel_degree_policy", &["MANUAL, LIMITED or AUTO"])],
        ..CASE
    },
    Case {
        name: "px: instance group with a space",
        base: PX,
        edits: &[Replace("\"inst1, all, inst12\"", "\"inst1, all, in st12\"")],
        want: &[at("in st12", 19, "parameters.inst1.instance_groups", &["not a group name"])],
        ..CASE
    },
    Case {
        name: "px: message size differs on one instance",
        base: PX,
        edits: &[Append("\n[parameters.inst3]\nparallel_execution_message_size = 4096\n")],
        want: &[nowhere("parameters.parallel_execution_message_size", &["must be the same on every instance"])],
        ..CASE
    },
    Case {
        name: "px: a fractional integer parameter",
        base: PX,
        edits: &[Replace("cpu_count = 4", "cpu_count = 4\nparallel_max_servers = 1.5")],
        want: &[at("parallel_max_servers", 24, "parameters.parallel_max_servers", &["expected an integer or text"])],
        ..CASE
    },
    Case {
        name: "px: a phase cannot change a restart parameter",
        base: PX,
        edits: &[Replace("duration_s = 1", "duration_s = 1\n\n[phase.parameters]\ninstance_groups = \"x\"")],
        want: &[at("instance_groups = \"x\"", 1, "phase[0].parameters.instance_groups", &["needs an instance restart"])],
        ..CASE
    },
    Case {
        name: "px: a phase's change breaks a rule between parameters",
        base: PX,
        edits: &[Replace("duration_s = 1", "duration_s = 1\n\n[phase.parameters]\nparallel_servers_target = 99")],
        want: &[
            nowhere("phase[0].parameters.parallel_servers_target", &["phase `run`, instance 1:", "exceeds parallel_max_servers = 40"]),
            nowhere("phase[0].parameters.parallel_servers_target", &["phase `run`, instance 2:", "exceeds parallel_max_servers = 40"]),
            nowhere("phase[0].parameters.parallel_servers_target", &["phase `run`, instance 3:", "exceeds parallel_max_servers = 40"]),
        ],
        ..CASE
    },
];

#[test]
fn every_case_reports_exactly_its_problems() {
    let failures: Vec<String> = CASES.iter().filter_map(check).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n\n")
    );
}

/// Sequences beyond SEQ$'s 16-bit row slots. Not a row of the table: the
/// file has 65,537 sequences, made here rather than written out.
#[test]
fn more_sequences_than_seq_dollar_holds() {
    let mut text = MIN.replace(MIN_STEPS, "steps = [{ op = \"commit\" }]");
    for i in 0..=65_536 {
        text.push_str(&format!("\n[[sequence]]\nname = \"s{i}\"\n"));
    }
    let got = match load_str(&text, "t.toml", &[]) {
        Ok(_) => panic!("65,537 sequences load"),
        Err(e) => e.to_string(),
    };
    let line = nth_line_of(&text, "name = \"s65536\"", 1).expect("the last sequence") - 1;
    assert_eq!(
        got,
        format!(
            "t.toml:{line}:1: `sequence[65536]`: 65,537 sequences, at most 65,536: each has a row in the SEQ$ block, whose row slots are 16-bit"
        )
    );
}

#[test]
fn case_names_are_unique() {
    for (i, case) in CASES.iter().enumerate() {
        assert!(
            !CASES[..i].iter().any(|c| c.name == case.name),
            "two cases are named `{}`",
            case.name
        );
    }
}

// ---- the table's vocabulary and its runner ----------------------------------

/// A change to a base text.
enum Edit {
    /// Replace every occurrence of the first text (which must occur) by the second.
    Replace(&'static str, &'static str),
    /// Add the text at the end.
    Append(&'static str),
}
use Edit::{Append, Replace};

/// Where a problem is reported.
enum Place {
    /// On the first line containing the text, at this column.
    Line(&'static str, usize),
    /// On the `n`th (1-based) line containing the text, at this column.
    NthLine(&'static str, usize, usize),
    /// In the `--set` with this `KEY=VALUE`.
    Set(&'static str),
    /// In no single place (a missing table, a rule across the file).
    Nowhere,
}

/// One problem a case expects.
struct Want {
    place: Place,
    /// The key the problem is about; "" when it names none.
    key: &'static str,
    /// What the problem says between parentheses after the key (which
    /// variant set the value); "" when it says nothing there.
    context: &'static str,
    /// Words the message must contain.
    words: &'static [&'static str],
    /// The message is exactly its one word.
    exact: bool,
}

/// On the first line containing `needle`, at column `col`.
const fn at(
    needle: &'static str,
    col: usize,
    key: &'static str,
    words: &'static [&'static str],
) -> Want {
    want(Place::Line(needle, col), key, words)
}

/// On the `nth` line containing `needle`, at column `col`.
const fn at_nth(
    needle: &'static str,
    nth: usize,
    col: usize,
    key: &'static str,
    words: &'static [&'static str],
) -> Want {
    want(Place::NthLine(needle, nth, col), key, words)
}

/// In `--set assignment`.
const fn set(assignment: &'static str, key: &'static str, words: &'static [&'static str]) -> Want {
    want(Place::Set(assignment), key, words)
}

/// In no single place.
const fn nowhere(key: &'static str, words: &'static [&'static str]) -> Want {
    want(Place::Nowhere, key, words)
}

const fn want(place: Place, key: &'static str, words: &'static [&'static str]) -> Want {
    Want {
        place,
        key,
        context: "",
        words,
        exact: false,
    }
}

impl Want {
    /// The message is exactly the one word given.
    const fn exactly(self) -> Want {
        Want {
            exact: true,
            ..self
        }
    }
    /// The key is followed by `(context)`.
    const fn within(self, context: &'static str) -> Want {
        Want { context, ..self }
    }
}

/// One broken file and the problems it must produce.
struct Case {
    name: &'static str,
    base: &'static str,
    edits: &'static [Edit],
    set: &'static [&'static str],
    want: &'static [Want],
}

/// MIN, unchanged: cases give what differs.
const CASE: Case = Case {
    name: "",
    base: MIN,
    edits: &[],
    set: &[],
    want: &[],
};

/// Runs one case; what went wrong, naming the case, or `None`.
fn check(case: &Case) -> Option<String> {
    let fail = |what: String, got: &str| match got {
        "" => Some(format!("case `{}`: {what}", case.name)),
        _ => Some(format!(
            "case `{}`: {what}\n  got:\n    {}",
            case.name,
            got.replace('\n', "\n    ")
        )),
    };
    let mut text = case.base.to_string();
    for edit in case.edits {
        match edit {
            Replace(from, to) if text.contains(from) => text = text.replace(from, to),
            Replace(from, _) => return fail(format!("the edit's `{from}` is not in the text"), ""),
            Append(more) => text.push_str(more),
        }
    }
    let set: Vec<String> = case.set.iter().map(|s| s.to_string()).collect();
    let got = match load_str(&text, "t.toml", &set) {
        Ok(_) => return fail("expected problems, the file loads".to_string(), ""),
        Err(e) => e.to_string(),
    };
    let lines: Vec<&str> = got.lines().collect();
    if lines.len() != case.want.len() {
        return fail(
            format!(
                "expected {} problem(s), got {}",
                case.want.len(),
                lines.len()
            ),
            &got,
        );
    }
    for (want, line) in case.want.iter().zip(&lines) {
        if let Err(what) = matches(want, line, &text) {
            return fail(what, &got);
        }
    }
    None
}

/// Whether one reported line is the problem wanted.
fn matches(want: &Want, line: &str, text: &str) -> Result<(), String> {
    let mut head = match want.place {
        Place::Line(needle, col) => format!("t.toml:{}:{col}", nth_line_of(text, needle, 1)?),
        Place::NthLine(needle, nth, col) => {
            format!("t.toml:{}:{col}", nth_line_of(text, needle, nth)?)
        }
        Place::Set(assignment) => format!("t.toml: --set {assignment}"),
        Place::Nowhere => "t.toml".to_string(),
    };
    match (want.key, want.context) {
        ("", "") => {}
        ("", context) => head.push_str(&format!(": ({context})")),
        (key, "") => head.push_str(&format!(": `{key}`")),
        (key, context) => head.push_str(&format!(": `{key}` ({context})")),
    }
    head.push_str(": ");
    let Some(message) = line.strip_prefix(&head) else {
        return Err(format!("expected a line starting `{head}`"));
    };
    if want.exact && want.words != [message] {
        return Err(format!("expected the message `{}`", want.words.join("")));
    }
    match want.words.iter().find(|w| !message.contains(**w)) {
        Some(missing) => Err(format!("expected `{missing}` in the message of `{head}`")),
        None => Ok(()),
    }
}

/// 1-based number of the `nth` line containing `needle`.
fn nth_line_of(text: &str, needle: &str, nth: usize) -> Result<usize, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(nth - 1)
        .map(|(i, _)| i + 1)
        .ok_or_else(|| format!("no line {nth} with `{needle}` in the text"))
}
