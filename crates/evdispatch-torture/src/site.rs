//! The document root every scenario serves: a few files inside, a secret
//! file beside it (outside the root) and symlinks that point in and out, so
//! an attack that escapes the root shows up as the secret in a response.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::PathBuf;

use anyhow::Context;

/// The content of the file outside the root: no response may contain it.
pub const SECRET: &str = "TOP-SECRET-evdispatch-torture: never served";

/// A temporary directory holding `www/` (the root) and `secret.txt` beside it.
#[derive(Debug)]
pub struct Site {
    /// The temporary directory (removed when dropped).
    pub dir: tempfile::TempDir,
    /// The document root, `dir/www`.
    pub root: PathBuf,
}

/// Size of `six.txt`, the file the load scenarios request.
pub const SIX: usize = 6144;

impl Site {
    /// Create the site: `index.html`, `six.txt` (6 KiB), `large.bin`
    /// (700 KB, sent with sendfile), `docs/index.html`, an empty directory,
    /// `inside-link.txt` (a symlink to `six.txt`), and the escapes
    /// `abs-link.txt` (absolute symlink to the secret), `rel-link.txt`
    /// (`../secret.txt`) and `up` (a symlink to `..`).
    pub fn create() -> anyhow::Result<Site> {
        let dir = tempfile::Builder::new()
            .prefix("evd-torture-")
            .tempdir()
            .context("cannot create a temporary directory for the document root")?;
        let root = dir.path().join("www");
        fs::create_dir_all(root.join("docs"))?;
        fs::create_dir_all(root.join("empty"))?;
        fs::write(dir.path().join("secret.txt"), SECRET)?;
        fs::write(root.join("index.html"), "<h1>torture</h1>\n")?;
        fs::write(root.join("docs/index.html"), "<p>docs</p>\n")?;
        let six: Vec<u8> = (0..SIX as u32).map(|i| b'a' + (i % 26) as u8).collect();
        fs::write(root.join("six.txt"), six)?;
        let large: Vec<u8> = (0..700_000u32).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(root.join("large.bin"), large)?;
        symlink(dir.path().join("secret.txt"), root.join("abs-link.txt"))?;
        symlink("../secret.txt", root.join("rel-link.txt"))?;
        symlink("six.txt", root.join("inside-link.txt"))?;
        symlink("..", root.join("up"))?;
        // Peers that drop privileges must still read it.
        for d in [dir.path(), root.as_path(), &root.join("docs")] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o755))?;
        }
        Ok(Site { dir, root })
    }
}
