//! When the idle event loop stops spinning and sleeps.
//!
//! Every idle spell spins [`SPIN_TIME`] first, then spins on up to
//! [`YIELD_TIME`] yielding its CPU on every turn ([`Idle::Yield`]): a
//! client whose next request comes a little later than a spinning
//! client's (a FUSE mount: the program's call and the mount's reply lie
//! between two requests) finds the loop awake instead of paying a wake-up
//! for every request, and a thread that wants the CPU meanwhile gets it at
//! the next turn (docs/PERFORMANCE.md, "The daemon's yielding spin").
//! Unless threads wait for a CPU ([`RunQueue`], read at most every
//! [`PROBE_EVERY`]): then the spell sleeps at once, since its spin would
//! take the CPU from a thread that has work, often the client or the
//! other daemon the next request waits for; a yield does not give it
//! back when the spinners outnumber the cores (docs/PERFORMANCE.md,
//! "Metadata path").
//! After bulk data (a request that moved at least [`BULK_BYTES`]), the
//! loop spins on, up to the daemon's `bulk_spin` (off by default: paired
//! runs on a loaded 2-core machine showed no gain; see docs/PERFORMANCE.md),
//! while no thread on the machine waits for a CPU: a client streaming
//! large transfers sends its next ones as its replies reach it, and a
//! refill that finds the loop asleep costs a wake-up on both sides and
//! draws both processes onto one CPU.

use std::time::{Duration, Instant};

use super::stats::ServerStats;
use crate::sys::RunQueue;

/// How long the loop spins without news before it sleeps: long enough that
/// a client's next request after a reply, or a storage result, usually
/// finds it awake; short enough to leave a small machine's cores to the
/// storage threads when nothing comes.
pub const SPIN_TIME: Duration = Duration::from_micros(50);
/// How long the loop stays awake in all, yielding its CPU after
/// [`SPIN_TIME`]: longer than a FUSE mount's turn-around between a reply and
/// its next request at queue depth 1.
pub const YIELD_TIME: Duration = Duration::from_micros(200);
/// Payload bytes of a request that count as bulk data (UCX sends 1 MiB
/// and more by rendezvous, 4 KiB eagerly).
pub const BULK_BYTES: u64 = 64 << 10;
/// Shortest time between two reads of the run queue.
pub const PROBE_EVERY: Duration = Duration::from_micros(200);
/// Idle turns between two clock reads.
const SPIN_CLOCK_EVERY: u32 = 32;
/// Default `bulk_spin`: off (sleep after [`SPIN_TIME`] whatever moved).
pub const DEFAULT_BULK_SPIN: Duration = Duration::ZERO;
/// Largest `bulk_spin`.
pub const MAX_BULK_SPIN: Duration = Duration::from_secs(1);

/// What the idle loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Idle {
    /// Poll again at once.
    Spin,
    /// Poll again after giving the CPU to any thread that waits for it.
    Yield,
    /// Sleep until woken.
    Sleep,
}

/// The loop's idle state between sleeps.
#[derive(Debug)]
pub(super) struct IdlePolicy {
    bulk_spin: Duration,
    cpus: Contention,
    /// Bulk data moved since the loop last slept.
    bulk: bool,
    /// Idle turns in this spell (0: the loop is busy).
    turns: u32,
    /// When this spell began.
    since: Instant,
    /// What the spell's last look at the clock decided.
    decided: Idle,
}

impl IdlePolicy {
    /// `bulk_spin` zero: sleep after [`SPIN_TIME`] whatever moved.
    pub(super) fn new(bulk_spin: Duration) -> IdlePolicy {
        IdlePolicy::with(bulk_spin, Contention::probed(RunQueue::open()))
    }

    fn with(bulk_spin: Duration, cpus: Contention) -> IdlePolicy {
        IdlePolicy {
            bulk_spin,
            cpus,
            bulk: false,
            turns: 0,
            since: Instant::now(),
            decided: Idle::Spin,
        }
    }

    /// A turn that did something: the idle spell, if any, is over.
    #[inline]
    pub(super) fn busy(&mut self) {
        self.turns = 0;
    }

    /// A turn that did nothing: what the loop does next. The clock is
    /// read once every [`SPIN_CLOCK_EVERY`] idle turns.
    #[inline]
    pub(super) fn idle_turn(&mut self, stats: &mut ServerStats) -> Idle {
        if self.turns == 0 {
            self.since = Instant::now();
            self.decided = Idle::Spin;
        }
        self.turns += 1;
        if self.turns.is_multiple_of(SPIN_CLOCK_EVERY) {
            self.decided = self.next(self.since, stats);
        }
        self.decided
    }

    /// A request moved `bytes` of payload.
    #[inline]
    pub(super) fn moved(&mut self, bytes: u64) {
        self.bulk |= bytes >= BULK_BYTES;
    }

    /// What the loop, idle since `since`, does next.
    pub(super) fn next(&mut self, since: Instant, stats: &mut ServerStats) -> Idle {
        let now = Instant::now();
        let idle = now.saturating_duration_since(since);
        let (contended, fresh) = self.cpus.look(now);
        let bulk_on = self.bulk && idle < self.bulk_spin;
        if bulk_on && fresh {
            match contended {
                Some(false) => stats.bulk_spin_free += 1,
                Some(true) => stats.bulk_spin_busy += 1,
                None => {}
            }
        }
        if contended == Some(true) {
            stats.idle_contended += 1;
            return Idle::Sleep;
        }
        if idle < SPIN_TIME || (bulk_on && contended == Some(false)) {
            return Idle::Spin;
        }
        if idle < YIELD_TIME {
            return Idle::Yield;
        }
        Idle::Sleep
    }

    /// The loop goes to sleep: the next spell spins long only after new
    /// bulk data.
    pub(super) fn sleeping(&mut self) {
        self.turns = 0;
        self.bulk = false;
    }
}

/// Whether threads wait for a CPU, as the run queue said at its last look.
#[derive(Debug)]
struct Contention {
    run_queue: Option<RunQueue>,
    next_probe: Instant,
    /// The last look's answer (`None`: unknown, as without a run queue).
    contended: Option<bool>,
}

impl Contention {
    /// Looks at `run_queue` (`None`: never known, never contended).
    fn probed(run_queue: Option<RunQueue>) -> Contention {
        Contention {
            run_queue,
            next_probe: Instant::now(),
            contended: None,
        }
    }

    /// The answer at `now`, and whether it was read now (at most every
    /// [`PROBE_EVERY`]).
    fn look(&mut self, now: Instant) -> (Option<bool>, bool) {
        let Some(run_queue) = &self.run_queue else {
            return (self.contended, false);
        };
        if now < self.next_probe {
            return (self.contended, false);
        }
        self.next_probe = now + PROBE_EVERY;
        self.contended = run_queue.contended();
        (self.contended, true)
    }
}

#[cfg(test)]
impl Contention {
    /// Always `contended`, never read.
    fn fixed(contended: Option<bool>) -> Contention {
        Contention {
            run_queue: None,
            next_probe: Instant::now(),
            contended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `bulk_spin` that switches the policy on.
    const ON: Duration = Duration::from_millis(2);

    fn idle_for(d: Duration) -> Instant {
        Instant::now()
            .checked_sub(d)
            .expect("a monotonic clock past boot")
    }

    fn free_cpus(bulk_spin: Duration) -> IdlePolicy {
        IdlePolicy::with(bulk_spin, Contention::fixed(Some(false)))
    }

    #[test]
    fn every_spell_spins_the_short_time_first() {
        let mut stats = ServerStats::new();
        for spin in [DEFAULT_BULK_SPIN, ON] {
            for known in [Some(false), None] {
                let mut policy = IdlePolicy::with(spin, Contention::fixed(known));
                assert_eq!(policy.next(Instant::now(), &mut stats), Idle::Spin);
            }
        }
        assert_eq!(stats.idle_contended, 0);
    }

    #[test]
    fn after_the_short_spin_it_yields_then_sleeps() {
        let mut stats = ServerStats::new();
        let mut policy = free_cpus(ON);
        policy.moved(4096);
        assert_eq!(
            policy.next(idle_for(SPIN_TIME * 2), &mut stats),
            Idle::Yield
        );
        assert_eq!(policy.next(idle_for(YIELD_TIME), &mut stats), Idle::Sleep);
    }

    #[test]
    fn switched_off_bulk_data_lengthens_nothing() {
        let mut stats = ServerStats::new();
        let mut policy = free_cpus(Duration::ZERO);
        policy.moved(1 << 20);
        assert_eq!(
            policy.next(idle_for(SPIN_TIME * 2), &mut stats),
            Idle::Yield
        );
        assert_eq!(policy.next(idle_for(YIELD_TIME), &mut stats), Idle::Sleep);
    }

    #[test]
    fn when_threads_wait_for_a_cpu_every_spell_sleeps_at_once() {
        let mut stats = ServerStats::new();
        let mut policy = IdlePolicy::with(ON, Contention::fixed(Some(true)));
        assert_eq!(policy.next(Instant::now(), &mut stats), Idle::Sleep);
        // Bulk data does not keep it awake either.
        policy.moved(1 << 20);
        assert_eq!(policy.next(Instant::now(), &mut stats), Idle::Sleep);
        assert_eq!(stats.idle_contended, 2);
    }

    #[test]
    fn after_bulk_data_it_spins_on_free_cpus_until_bulk_spin_is_over() {
        let mut stats = ServerStats::new();
        let mut policy = free_cpus(ON);
        policy.moved(1 << 20);
        assert_eq!(
            policy.next(idle_for(YIELD_TIME * 2), &mut stats),
            Idle::Spin
        );
        assert_eq!(policy.next(idle_for(ON), &mut stats), Idle::Sleep);
        // Asleep, then woken: only new bulk data lengthens the spin again.
        policy.sleeping();
        assert_eq!(policy.next(idle_for(YIELD_TIME), &mut stats), Idle::Sleep);
    }

    #[test]
    fn after_bulk_data_the_run_queue_s_looks_are_counted() {
        let mut stats = ServerStats::new();
        let mut policy = IdlePolicy::new(ON);
        policy.moved(1 << 20);
        // Whatever the machine's load: the answer is the look's (threads
        // waiting for a CPU: the loop sleeps at once).
        let next = policy.next(idle_for(SPIN_TIME * 2), &mut stats);
        assert_eq!(stats.bulk_spin_free + stats.bulk_spin_busy, 1);
        let free = stats.bulk_spin_free == 1;
        assert_eq!(next, if free { Idle::Spin } else { Idle::Sleep });
        assert_eq!(stats.idle_contended, u64::from(!free));
    }
}
