//! A fault point for testing diagnosis: every request held in the queue
//! for a set time before its dispatch, on the daemons the job names
//! (`BENCHFS_FAULT_QUEUE_DELAY_US`, read once at the daemon's start; see
//! docs/DIAGNOSE.md). Only the engine's own layer slows: the storage op,
//! the device and the network stay as they are.

use std::time::Duration;

use crate::error::{Error, Result};

/// The variable naming the delay: `US` for every daemon, or
/// `NODE=US[,NODE=US...]` for the daemons named.
pub const QUEUE_DELAY_VARIABLE: &str = "BENCHFS_FAULT_QUEUE_DELAY_US";
/// Longest delay accepted: a fault point, not a way to stop a daemon.
const MAX_DELAY_US: u64 = 10_000_000;

/// The queue delay of daemon `node_name` from the variable's value `spec`
/// (zero: not named); an error names the variable and the bad part.
pub fn queue_delay(spec: Option<&str>, node_name: &str) -> Result<Duration> {
    let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(Duration::ZERO);
    };
    let mut found = Duration::ZERO;
    for part in spec.split(',').map(str::trim) {
        let (node, us) = match part.split_once('=') {
            Some((node, us)) => (Some(node.trim()), us.trim()),
            None => (None, part),
        };
        let bad = || {
            Error::invalid(
                QUEUE_DELAY_VARIABLE,
                format!(
                    "{part:?}: must be microseconds (at most {MAX_DELAY_US}) \
                     or NODE=MICROSECONDS"
                ),
            )
        };
        let us: u64 = us.parse().map_err(|_| bad())?;
        if us > MAX_DELAY_US || node == Some("") {
            return Err(bad());
        }
        if node.is_none_or(|n| n == node_name) {
            found = Duration::from_micros(us);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_empty_is_no_delay() {
        assert_eq!(queue_delay(None, "n0").unwrap(), Duration::ZERO);
        assert_eq!(queue_delay(Some(" "), "n0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn a_plain_value_holds_every_daemon() {
        assert_eq!(
            queue_delay(Some("250"), "n0").unwrap(),
            Duration::from_micros(250)
        );
    }

    #[test]
    fn named_nodes_hold_only_themselves() {
        let spec = Some("local3=20000, local1=5");
        assert_eq!(
            queue_delay(spec, "local3").unwrap(),
            Duration::from_millis(20)
        );
        assert_eq!(
            queue_delay(spec, "local1").unwrap(),
            Duration::from_micros(5)
        );
        assert_eq!(queue_delay(spec, "local0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn bad_values_name_the_variable_and_the_part() {
        for spec in ["fast", "local3=", "=20", "local3=-1", "20000000"] {
            let message = queue_delay(Some(spec), "local3").unwrap_err().to_string();
            assert!(message.contains(QUEUE_DELAY_VARIABLE), "{message}");
            assert!(message.contains(spec), "{message}");
        }
    }
}
