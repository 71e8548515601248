//! The fuzz targets' bodies, run deterministically: the attack corpus and
//! tens of thousands of seeded mutations of it through the invariants of
//! request parsing and path normalisation (`cargo fuzz` runs the same
//! bodies for longer: scripts/fuzz.sh).

use evdispatch_torture::invariants::{
    check_request, check_target, run_mutations, seeds, target_of,
};

#[test]
fn parse_request_invariants_hold_on_mutated_attacks() {
    let n = run_mutations(&seeds(), 0x5eed_0001, 150_000, check_request);
    assert_eq!(n, 150_000);
}

#[test]
fn normalize_target_invariants_hold_on_mutated_targets() {
    let targets: Vec<Vec<u8>> = seeds().iter().map(|s| target_of(s).to_vec()).collect();
    let n = run_mutations(&targets, 0x5eed_0002, 200_000, check_target);
    assert_eq!(n, 200_000);
}
