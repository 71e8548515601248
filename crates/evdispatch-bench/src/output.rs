//! What every benchmark prints: its outcome as text or JSON (saved when
//! asked), and its progress bar.

/// Print `outcome` as JSON (`json`) or with `print`, and also save the JSON
/// to `save` when given.
pub(crate) fn emit<T: serde::Serialize>(
    outcome: &T,
    json: bool,
    save: Option<&std::path::Path>,
    print: impl FnOnce(&T),
) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = serde_json::to_string_pretty(outcome)?;
    if let Some(path) = save {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    if json {
        println!("{text}");
    } else {
        print(outcome);
    }
    Ok(())
}

/// A progress bar on stderr of `len` steps (hidden unless `shown`), in the
/// style every bench draws; `eta` adds the estimated time left.
pub(crate) fn progress_bar(len: u64, shown: bool, eta: bool) -> indicatif::ProgressBar {
    let bar = if shown {
        indicatif::ProgressBar::new(len)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let template = if eta {
        "{elapsed_precise} [{bar:30}] {pos}/{len} {msg} (eta {eta})"
    } else {
        "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}"
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}
