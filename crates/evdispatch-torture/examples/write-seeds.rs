//! Write the fuzz seeds drawn from the attack corpus into a directory, one
//! file per seed: `write-seeds parse_request|normalize_target DIR`
//! (`scripts/fuzz.sh` runs it to start a target's corpus).

use evdispatch_torture::invariants::{seeds, target_of};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(target), Some(dir)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: write-seeds parse_request|normalize_target DIR");
    };
    std::fs::create_dir_all(&dir)?;
    for (i, s) in seeds().iter().enumerate() {
        let bytes: &[u8] = match target.as_str() {
            "parse_request" => s,
            "normalize_target" => target_of(s),
            other => anyhow::bail!("unknown target '{other}': parse_request or normalize_target"),
        };
        std::fs::write(format!("{dir}/seed-{i:03}"), bytes)?;
    }
    Ok(())
}
