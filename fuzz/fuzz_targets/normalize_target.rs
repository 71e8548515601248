//! Path resolution never panics and never leaves the root: the invariants
//! are `evdispatch_torture::invariants::check_target`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    evdispatch_torture::invariants::check_target(data);
});
