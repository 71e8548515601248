//! `Accept-Encoding` negotiation for precompressed files (RFC 9110 §12.5.3),
//! as nginx's `gzip_static` and its brotli module's `brotli_static` do: when
//! `f.br` or `f.gz` sits beside `f`, the client's preferences pick one.
//!
//! * Each element is a coding with an optional `q` weight; `q=0` refuses
//!   that coding. `x-gzip` counts as `gzip` (§8.4.1.3). `*` gives its weight
//!   to every coding not named.
//! * A weight that is not a valid `qvalue` (§12.4.2: `0` to `1` with at most
//!   three decimals) makes its element void: it is skipped as if absent, so
//!   `gzip;q=junk` does not admit gzip (nginx also refuses it).
//! * The highest weight wins; at equal weights br is preferred to gzip (it is
//!   the smaller), and an encoding to identity. Identity not named is
//!   acceptable but least preferred; named with a weight it competes with
//!   that weight (`gzip;q=0.5, identity` sends the file as it is).

use crate::semantics::conditional::Coding;
use crate::semantics::request::FieldLines;

/// The coding to send given the `Accept-Encoding` lines (none: header
/// absent) and the set of variants present (bits of [`Coding::bit`]).
pub fn negotiate(accept: &FieldLines<'_>, available: u8) -> Coding {
    if accept.is_absent() || available == 0 {
        return Coding::Identity;
    }
    // Weights in thousandths; None: not named.
    let (mut br, mut gzip, mut identity, mut star) = (None, None, None, None);
    for element in accept.elements() {
        let mut parts = element.split(|&b| b == b';');
        let coding = crate::semantics::range::trim_ows(parts.next().unwrap_or(b""));
        if coding.is_empty() {
            continue;
        }
        let mut q = Some(1000u16);
        for param in parts {
            let param = crate::semantics::range::trim_ows(param);
            let Some(eq) = param.iter().position(|&b| b == b'=') else {
                q = None;
                break;
            };
            let (name, value) = (
                crate::semantics::range::trim_ows(&param[..eq]),
                &param[eq + 1..],
            );
            if name.eq_ignore_ascii_case(b"q") {
                q = qvalue(crate::semantics::range::trim_ows(value));
            }
        }
        let Some(q) = q else {
            continue; // a void element
        };
        let slot = if coding.eq_ignore_ascii_case(b"br") {
            &mut br
        } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
            &mut gzip
        } else if coding.eq_ignore_ascii_case(b"identity") {
            &mut identity
        } else if coding == b"*" {
            &mut star
        } else {
            continue;
        };
        *slot = Some(q);
    }
    let weight = |named: Option<u16>, c: Coding| -> u16 {
        if available & c.bit() == 0 {
            0
        } else {
            named.or(star).unwrap_or(0)
        }
    };
    let (qbr, qgz) = (weight(br, Coding::Br), weight(gzip, Coding::Gzip));
    let (best, q) = if qbr >= qgz {
        (Coding::Br, qbr)
    } else {
        (Coding::Gzip, qgz)
    };
    if q == 0 || identity.is_some_and(|qi| qi > q) {
        Coding::Identity
    } else {
        best
    }
}

/// A `qvalue` (§12.4.2) in thousandths: `0`, `0.5`, `0.125`, `1`, `1.000`.
fn qvalue(v: &[u8]) -> Option<u16> {
    let (int, frac) = match v.iter().position(|&b| b == b'.') {
        Some(dot) => (&v[..dot], &v[dot + 1..]),
        None => (v, &b""[..]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match int {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coding::*;

    const BOTH: u8 = 3;

    fn n(h: &str, avail: u8) -> Coding {
        negotiate(&FieldLines::one(Some(h.as_bytes())), avail)
    }

    #[test]
    fn plain_lists() {
        assert_eq!(negotiate(&FieldLines::default(), BOTH), Identity);
        assert_eq!(n("gzip, deflate, br", BOTH), Br);
        assert_eq!(n("gzip, deflate, br", Gzip.bit()), Gzip);
        assert_eq!(n("gzip", BOTH), Gzip);
        assert_eq!(n("br", Gzip.bit()), Identity);
        assert_eq!(n("deflate", BOTH), Identity);
        assert_eq!(n("", BOTH), Identity);
        assert_eq!(n("GZIP", BOTH), Gzip);
        assert_eq!(n("x-gzip", BOTH), Gzip);
        assert_eq!(n("gzip", 0), Identity);
    }

    #[test]
    fn weights() {
        assert_eq!(n("gzip;q=1, br;q=0.5", BOTH), Gzip);
        assert_eq!(n("gzip;q=0.8, br;q=0.8", BOTH), Br);
        assert_eq!(n("br;q=0, gzip", BOTH), Gzip);
        assert_eq!(n("gzip;q=0", BOTH), Identity);
        assert_eq!(n("gzip ; q=0.001", BOTH), Gzip);
        assert_eq!(n("gzip;Q=0", BOTH), Identity);
        assert_eq!(n("*", BOTH), Br);
        assert_eq!(n("*;q=0", BOTH), Identity);
        assert_eq!(n("*;q=0, gzip", BOTH), Gzip);
        assert_eq!(n("br;q=0, *", BOTH), Gzip);
        assert_eq!(n("gzip;q=0.5, identity", BOTH), Identity);
        assert_eq!(n("gzip, identity;q=0.5", BOTH), Gzip);
        assert_eq!(n("gzip;q=1.000", BOTH), Gzip);
    }

    #[test]
    fn junk_weights_void_their_element() {
        for h in [
            "gzip;q=junk",
            "gzip;q=2",
            "gzip;q=1.5",
            "gzip;q=0.0001",
            "gzip;q=",
            "gzip;q=-1",
            "gzip;q",
            "gzip;q=.5",
        ] {
            assert_eq!(n(h, Gzip.bit()), Identity, "{h}");
        }
        // A void element leaves the others alone.
        assert_eq!(n("br;q=x, gzip", BOTH), Gzip);
        assert_eq!(n("gzip;q=0.5;foo=bar", BOTH), Gzip);
    }

    #[test]
    fn only_offered_variants_are_chosen() {
        let pieces = [
            "gzip", "br", ";", "q=", "0", "1", ".5", ",", "*", " ", "identity",
        ];
        crate::semantics::each_word(&pieces, 5, |h| {
            for avail in 0..4u8 {
                let c = n(&h, avail);
                assert!(c == Identity || avail & c.bit() != 0, "{h} {avail}: {c:?}");
                if !h.contains("br") && !h.contains('*') {
                    assert_ne!(c, Br, "{h}");
                }
            }
        });
    }
}
