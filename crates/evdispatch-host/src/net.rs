//! The host's network namespace: local TCP ports in use.

use std::io;

use crate::process::io_error;

/// How many distinct local TCP ports in `lo..=hi` a socket of this network
/// namespace holds, in any state (TIME_WAIT included), on any address. A
/// client that binds each connection to a port of its own on the wildcard
/// address (httperf `--hog`) cannot take any of them.
pub fn held_local_ports(lo: u16, hi: u16) -> io::Result<usize> {
    let mut ports = std::collections::HashSet::new();
    for (i, table) in [procfs::net::tcp(), procfs::net::tcp6()]
        .into_iter()
        .enumerate()
    {
        let entries = match table {
            Ok(e) => e,
            // A kernel without IPv6 has no tcp6 table.
            Err(_) if i == 1 => continue,
            Err(e) => return Err(io_error(e)),
        };
        for e in entries {
            let port = e.local_address.port();
            if (lo..=hi).contains(&port) {
                ports.insert(port);
            }
        }
    }
    Ok(ports.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_port_is_counted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(held_local_ports(port, port).unwrap(), 1);
        assert!(held_local_ports(1, 65535).unwrap() >= 1);
    }
}
