//! Request parsing never panics and its verdicts are consistent: the
//! invariants are `evdispatch_torture::invariants::check_request`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    evdispatch_torture::invariants::check_request(data);
});
