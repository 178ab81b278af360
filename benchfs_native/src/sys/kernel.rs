//! What the kernel says about this process, for the stats reply's `kernel`
//! object (docs/RPC.md, "Kernel"): the data directory's device, the
//! process's cgroups with their I/O limits on that device (v1
//! `blkio.throttle.*`, v2 `io.max`) and CPU quota (v1 `cpu.cfs_quota_us`,
//! v2 `cpu.max`) with its throttling counters, pressure stall information
//! (the node's and the v2 cgroup's), the threads' run time and run delay
//! (schedstat), the node's steal and reclaim.
//!
//! Read afresh on every call, since a process can be moved into another
//! cgroup while it runs; a file that cannot be read leaves its key out (or
//! null), never an error. Counters are cumulative: the reader takes two
//! objects' difference (`benchfs.health.kernel_evidence.kernel_interval`).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// The `kernel` object for a process whose data lives under `data_dir`.
pub fn snapshot(data_dir: &Path) -> Value {
    let device = Device::of(data_dir);
    let groups = Groups::of_self();
    let mut m = Map::new();
    m.insert("time_ns".into(), monotonic_ns().into());
    m.insert(
        "device".into(),
        device.as_ref().map_or(Value::Null, |d| d.json(data_dir)),
    );
    m.insert("cgroup".into(), groups.json(device.as_ref()));
    if let Some(p) = pressure_of(Path::new("/proc/pressure")) {
        m.insert("pressure".into(), p);
    }
    m.insert("process".into(), process());
    m.insert("cpu".into(), cpu());
    m.insert("memory".into(), memory());
    Value::Object(m)
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// The block device a directory is on, and the whole disk of a partition
/// (cgroup I/O limits are set on the disk).
struct Device {
    dev: String,
    disk: String,
    name: String,
}

impl Device {
    fn of(dir: &Path) -> Option<Device> {
        let st_dev = fs::metadata(dir).ok()?.dev();
        let dev = format!("{}:{}", libc::major(st_dev), libc::minor(st_dev));
        let sys = fs::canonicalize(format!("/sys/dev/block/{dev}")).ok()?;
        let whole = if sys.join("partition").exists() {
            sys.parent()?.to_path_buf()
        } else {
            sys
        };
        let disk = read_trimmed(&whole.join("dev")).unwrap_or_else(|| dev.clone());
        let name = whole.file_name()?.to_string_lossy().into_owned();
        Some(Device { dev, disk, name })
    }

    fn json(&self, dir: &Path) -> Value {
        json!({"dir": dir.to_string_lossy(), "dev": self.dev, "disk": self.disk, "name": self.name})
    }
}

/// The process's cgroup paths: per v1 controller, and the v2 one.
struct Groups {
    v1: Vec<(String, String)>,
    v2: Option<String>,
}

impl Groups {
    fn of_self() -> Groups {
        let text = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut v1 = Vec::new();
        let mut v2 = None;
        for line in text.lines() {
            let mut fields = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if controllers.is_empty() {
                v2 = Some(path.to_owned());
            }
            for controller in controllers.split(',').filter(|c| !c.is_empty()) {
                v1.push((controller.to_owned(), path.to_owned()));
            }
        }
        Groups { v1, v2 }
    }

    fn v1_path(&self, controller: &str) -> Option<&str> {
        self.v1
            .iter()
            .find(|(c, _)| c == controller)
            .map(|(_, p)| p.as_str())
    }

    fn json(&self, device: Option<&Device>) -> Value {
        let mounts = Mounts::read();
        let mut v1 = Map::new();
        for controller in ["blkio", "cpu", "memory"] {
            if let Some(path) = self.v1_path(controller) {
                v1.insert(controller.into(), path.into());
            }
        }
        let v1_dir = |controller: &str| -> Option<(PathBuf, PathBuf, String)> {
            let rel = self.v1_path(controller)?;
            let root = mounts.v1(controller)?;
            Some((root.clone(), join(root, rel), rel.to_owned()))
        };
        let v2_dir = mounts
            .v2
            .as_ref()
            .zip(self.v2.as_ref())
            .map(|(root, rel)| (root.clone(), join(root, rel), rel.clone()));
        let v2_has = |controller: &str| {
            v2_dir.as_ref().is_some_and(|(root, _, _)| {
                read_trimmed(&root.join("cgroup.controllers"))
                    .is_some_and(|c| c.split_whitespace().any(|x| x == controller))
            })
        };
        let io_limits = device.and_then(|d| {
            if let Some((root, dir, rel)) = v1_dir("blkio") {
                return blkio_limits(&root, &dir, &rel, d);
            }
            let (root, dir, rel) = v2_dir.as_ref().filter(|_| v2_has("io"))?;
            io_max_limits(root, dir, rel, d)
        });
        let cpu = match v1_dir("cpu") {
            Some((_, dir, rel)) => cfs_quota(&dir, &rel),
            None => v2_dir
                .as_ref()
                .filter(|_| v2_has("cpu"))
                .and_then(|(_, dir, rel)| cpu_max(dir, rel)),
        };
        // The root group's files are the node's (in /proc/pressure already).
        let pressure = v2_dir
            .as_ref()
            .filter(|(_, _, rel)| rel != "/")
            .and_then(|(_, dir, _)| cgroup_pressure(dir));
        json!({
            "v1": Value::Object(v1),
            "v2": self.v2,
            "io_limits": io_limits,
            "cpu": cpu,
            "pressure": pressure,
        })
    }
}

/// Where the cgroup hierarchies are mounted.
struct Mounts {
    v1: Vec<(String, PathBuf)>,
    v2: Option<PathBuf>,
}

impl Mounts {
    fn read() -> Mounts {
        let text = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut v1 = Vec::new();
        let mut v2 = None;
        for line in text.lines() {
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            let (Some(dir), Some(kind), Some(opts)) = (fields.get(1), fields.get(2), fields.get(3))
            else {
                continue;
            };
            match *kind {
                "cgroup2" => v2 = v2.or_else(|| Some(PathBuf::from(dir))),
                "cgroup" => {
                    for opt in opts.split(',') {
                        v1.push((opt.to_owned(), PathBuf::from(dir)));
                    }
                }
                _ => {}
            }
        }
        Mounts { v1, v2 }
    }

    fn v1(&self, controller: &str) -> Option<&PathBuf> {
        self.v1
            .iter()
            .find(|(c, _)| c == controller)
            .map(|(_, p)| p)
    }
}

fn join(root: &Path, rel: &str) -> PathBuf {
    root.join(rel.trim_start_matches('/'))
}

/// The group and its ancestors up to the hierarchy's root, the group first,
/// each with its path in the hierarchy: a limit on an ancestor applies too.
fn lineage(root: &Path, dir: &Path, rel: &str) -> Vec<(PathBuf, String)> {
    let mut found = vec![(dir.to_path_buf(), rel.to_owned())];
    let mut here = dir.to_path_buf();
    let mut name = rel.to_owned();
    while here != root && here.pop() {
        name = match name.rfind('/') {
            Some(0) | None => "/".to_owned(),
            Some(i) => name[..i].to_owned(),
        };
        found.push((here.clone(), name.clone()));
    }
    found
}

const LIMIT_KEYS: [&str; 4] = ["read_bps", "write_bps", "read_iops", "write_iops"];

/// The tightest v1 throttle on the device over the group and its ancestors.
fn blkio_limits(root: &Path, dir: &Path, rel: &str, d: &Device) -> Option<Value> {
    let files = [
        "blkio.throttle.read_bps_device",
        "blkio.throttle.write_bps_device",
        "blkio.throttle.read_iops_device",
        "blkio.throttle.write_iops_device",
    ];
    let mut limits = [None::<u64>; 4];
    let mut from = None;
    for (group, name) in lineage(root, dir, rel) {
        for (i, file) in files.iter().enumerate() {
            let text = fs::read_to_string(group.join(file)).unwrap_or_default();
            for line in text.lines() {
                let mut fields = line.split_ascii_whitespace();
                let (Some(dev), Some(value)) = (fields.next(), fields.next()) else {
                    continue;
                };
                let Ok(value) = value.parse::<u64>() else {
                    continue;
                };
                if (dev == d.disk || dev == d.dev) && value > 0 {
                    limits[i] = Some(limits[i].map_or(value, |v| v.min(value)));
                    from.get_or_insert_with(|| name.clone());
                }
            }
        }
    }
    limits_json("blkio.throttle", from?, limits)
}

/// The tightest v2 `io.max` on the device over the group and its ancestors.
fn io_max_limits(root: &Path, dir: &Path, rel: &str, d: &Device) -> Option<Value> {
    let keys = ["rbps", "wbps", "riops", "wiops"];
    let mut limits = [None::<u64>; 4];
    let mut from = None;
    for (group, name) in lineage(root, dir, rel) {
        let text = fs::read_to_string(group.join("io.max")).unwrap_or_default();
        for line in text.lines() {
            let mut fields = line.split_ascii_whitespace();
            let Some(dev) = fields.next() else { continue };
            if dev != d.disk && dev != d.dev {
                continue;
            }
            for field in fields {
                let Some((key, value)) = field.split_once('=') else {
                    continue;
                };
                let (Some(i), Ok(value)) =
                    (keys.iter().position(|k| *k == key), value.parse::<u64>())
                else {
                    continue; // "max": no limit
                };
                limits[i] = Some(limits[i].map_or(value, |v| v.min(value)));
                from.get_or_insert_with(|| name.clone());
            }
        }
    }
    limits_json("io.max", from?, limits)
}

fn limits_json(source: &str, cgroup: String, limits: [Option<u64>; 4]) -> Option<Value> {
    let mut m = Map::new();
    m.insert("source".into(), source.into());
    m.insert("cgroup".into(), cgroup.into());
    for (key, value) in LIMIT_KEYS.iter().zip(limits) {
        m.insert((*key).into(), value.map_or(Value::Null, Value::from));
    }
    Some(Value::Object(m))
}

/// The v1 CPU quota of the group (-1: none) and its throttling counters.
fn cfs_quota(dir: &Path, rel: &str) -> Option<Value> {
    let quota: i64 = read_trimmed(&dir.join("cpu.cfs_quota_us"))?.parse().ok()?;
    let period: u64 = read_trimmed(&dir.join("cpu.cfs_period_us"))?.parse().ok()?;
    let text = fs::read_to_string(dir.join("cpu.stat")).unwrap_or_default();
    let stat = keyed(&text);
    Some(json!({
        "source": "cpu.cfs_quota_us",
        "cgroup": rel,
        "quota_us": if quota > 0 { Value::from(quota) } else { Value::Null },
        "period_us": period,
        "nr_periods": stat("nr_periods"),
        "nr_throttled": stat("nr_throttled"),
        "throttled_ns": stat("throttled_time"),
    }))
}

/// The v2 `cpu.max` of the group ("max": none) and its throttling counters.
fn cpu_max(dir: &Path, rel: &str) -> Option<Value> {
    let text = read_trimmed(&dir.join("cpu.max"))?;
    let mut fields = text.split_ascii_whitespace();
    let quota = fields.next()?.parse::<u64>().ok();
    let period: u64 = fields.next()?.parse().ok()?;
    let text = fs::read_to_string(dir.join("cpu.stat")).unwrap_or_default();
    let stat = keyed(&text);
    Some(json!({
        "source": "cpu.max",
        "cgroup": rel,
        "quota_us": quota,
        "period_us": period,
        "nr_periods": stat("nr_periods"),
        "nr_throttled": stat("nr_throttled"),
        "throttled_ns": stat("throttled_usec").map(|us| us * 1000),
    }))
}

/// A `key value` file's values by key.
fn keyed(text: &str) -> impl Fn(&str) -> Option<u64> + '_ {
    move |wanted| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(' ')?;
            if key == wanted {
                value.trim().parse().ok()
            } else {
                None
            }
        })
    }
}

/// `io`, `cpu` and `memory` pressure from `<dir>/<name>` (the node's) or
/// `<dir>/<name>.pressure` (a v2 cgroup's).
fn pressure_of(dir: &Path) -> Option<Value> {
    pressure_files(dir, "")
}

fn cgroup_pressure(dir: &Path) -> Option<Value> {
    pressure_files(dir, ".pressure")
}

fn pressure_files(dir: &Path, suffix: &str) -> Option<Value> {
    let mut m = Map::new();
    for resource in ["io", "cpu", "memory"] {
        if let Ok(text) = fs::read_to_string(dir.join(format!("{resource}{suffix}"))) {
            m.insert(resource.into(), psi(&text));
        }
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// `some avg10=2.13 avg60=1.70 avg300=2.50 total=982479785` lines.
fn psi(text: &str) -> Value {
    let mut m = Map::new();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(kind) = fields.next() else { continue };
        let mut row = Map::new();
        for field in fields {
            let Some((key, value)) = field.split_once('=') else {
                continue;
            };
            let key = if key == "total" { "total_us" } else { key };
            if let Ok(number) = value.parse::<f64>() {
                row.insert(key.into(), json!(number));
            }
        }
        m.insert(kind.into(), Value::Object(row));
    }
    Value::Object(m)
}

/// The process's threads' run time, run delay (time runnable but waiting
/// for a CPU) and timeslices, summed over its threads now (schedstat).
fn process() -> Value {
    let (mut threads, mut run, mut delay, mut slices) = (0u64, 0u64, 0u64, 0u64);
    if let Ok(tasks) = fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let Some(line) = read_trimmed(&task.path().join("schedstat")) else {
                continue; // the thread ended
            };
            let v: Vec<u64> = line
                .split_ascii_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            if let [r, d, s] = v[..] {
                threads += 1;
                run += r;
                delay += d;
                slices += s;
            }
        }
    }
    if threads == 0 {
        return Value::Null;
    }
    json!({"threads": threads, "run_ns": run, "run_delay_ns": delay, "timeslices": slices})
}

/// The node's CPUs, steal and total ticks (`/proc/stat`) and runnable threads.
fn cpu() -> Value {
    // Safety: sysconf reads a system value, no memory is passed.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let text = fs::read_to_string("/proc/stat").unwrap_or_default();
    let mut m = Map::new();
    m.insert("cpus".into(), cpus.into());
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cpu ") {
            // user nice system idle iowait irq softirq steal (guest is in user).
            let ticks: Vec<u64> = rest
                .split_ascii_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            if ticks.len() >= 8 {
                m.insert("steal_ticks".into(), ticks[7].into());
                m.insert("total_ticks".into(), ticks[..8].iter().sum::<u64>().into());
            }
        } else if let Some(rest) = line.strip_prefix("procs_running ")
            && let Ok(n) = rest.trim().parse::<u64>()
        {
            m.insert("procs_running".into(), n.into());
        }
    }
    Value::Object(m)
}

/// Pages the node's kernel scanned and reclaimed (`/proc/vmstat`; kswapd,
/// direct and khugepaged, which the anon/file split counts again).
fn memory() -> Value {
    let text = fs::read_to_string("/proc/vmstat").unwrap_or_default();
    let stat = keyed(&text);
    let sum = |prefix: &str| -> u64 {
        ["kswapd", "direct", "khugepaged"]
            .iter()
            .filter_map(|who| stat(&format!("{prefix}_{who}")))
            .sum()
    };
    json!({"pgscan": sum("pgscan"), "pgsteal": sum("pgsteal")})
}

fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ancestors_of_a_group_end_at_the_hierarchy_s_root() {
        let root = Path::new("/sys/fs/cgroup/blkio");
        let found = lineage(root, &root.join("a/b"), "/a/b");
        let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["/a/b", "/a", "/"]);
        assert_eq!(found[2].0, root);
        assert_eq!(lineage(root, root, "/").len(), 1);
    }

    #[test]
    fn a_pressure_file_s_lines_are_read_by_kind() {
        let text = "some avg10=2.13 avg60=1.70 avg300=2.50 total=982479785\nfull avg10=1.97 avg60=1.03 avg300=1.75 total=7\n";
        let found = psi(text);
        assert_eq!(found["some"]["avg10"], json!(2.13));
        assert_eq!(found["full"]["total_us"], json!(7.0));
    }

    #[test]
    fn this_process_s_snapshot_has_its_threads_and_device() {
        let found = snapshot(Path::new("/proc/self/.."));
        assert!(
            found["process"]["threads"].as_u64().unwrap_or(0) >= 1,
            "{found}"
        );
        assert!(found["time_ns"].as_u64().unwrap_or(0) > 0);
        assert!(found["cpu"]["cpus"].as_i64().unwrap_or(0) >= 1);
        assert!(found["cgroup"].is_object());
    }
}
