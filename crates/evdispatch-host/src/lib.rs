//! Facts and controls of the host shared by the evdispatch commands:
//!
//! * **Processes** (`/proc/PID`): CPU time and memory of a process
//!   ([`sample`], [`resident`], [`CpuMeter`]), its open descriptors, its
//!   children. The study runs servers and load generators as separate
//!   processes, so the CPU a figure is charged to is read from the kernel,
//!   never guessed: the total from the process's CPU-time clock, to the
//!   nanosecond, and its user/system split from `/proc/PID/stat`, in clock
//!   ticks.
//! * **CPUs**: time by kind per CPU from `/proc/stat`, steal included
//!   ([`cpu_times`], [`steal_pct_max`]), CPU lists ([`parse_cpu_list`]), the
//!   idle states ([`cpuidle`], [`ShallowIdle`]).
//! * **Controls**: CPU pinning ([`set_affinity`], [`pin_current_thread`]),
//!   resource limits ([`get_rlimit`], [`set_rlimit`]), idle scheduling
//!   priority, death with the parent.
//! * **Network**: local TCP ports in use ([`held_local_ports`]).
//! * **Durations**: the one duration grammar of every command line
//!   ([`parse_duration`]).

#![deny(missing_docs)]

mod cpus;
mod duration;
mod net;
mod process;
mod sys;

pub use cpus::{
    available_cpus, cpu_times, cpuidle, parse_cpu_list, parse_cpu_times, steal_pct_max, CpuTimes,
    ShallowIdle,
};
pub use duration::{parse_duration, DurationError};
pub use net::held_local_ports;
pub use process::{
    open_fds, open_fds_sum, parse_stat, parse_status_resident, resident, resident_sum, sample,
    sample_sum, with_children, CpuMeter, CpuUse, ProcSample, Resident,
};

pub use nix::sched::CpuSet;
pub use sys::{
    clock_ticks_per_sec, cpu_set, die_with_parent, get_rlimit, pin_current_thread,
    process_cpu_time, set_affinity, set_idle_priority, set_rlimit, Resource,
};
