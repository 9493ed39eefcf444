//! Mode 3: `accept` and `confirm` on header items built from arbitrary bytes and extension
//! tokens. It owns an independent RFC 7692 §7.1 parser ([`Offer`], `parse_item`) and the
//! checks of a server's answer against the offer it answers; it does not send or read frames.

use tickwire_codec::deflate::{DeflateConfig, DeflateParams};

use crate::common::Bytes;

// --- mode 3: negotiation ---

pub(crate) fn run(mut input: Bytes<'_>) {
    let server = negotiation_config(&mut input);
    let client = negotiation_config(&mut input);
    let mut header = String::new();
    for &b in input.0.iter().take(512) {
        if b >= 0x80 {
            header.push_str(TOKENS[usize::from(b & 0x7f) % TOKENS.len()]);
        } else {
            header.push(char::from(b));
        }
    }
    let items: Vec<&str> = header.split(',').collect();

    // The server answers the first valid offer, declining invalid ones (RFC 7692 §5); it
    // fails only when every permessage-deflate offer is invalid.
    let offers: Vec<_> = items.iter().filter_map(|i| parse_item(i, false)).collect();
    match server.accept(&items) {
        Err(_) => assert!(
            !offers.is_empty() && offers.iter().all(Result::is_err),
            "refused valid offers {items:?}"
        ),
        Ok(None) => assert!(offers.is_empty(), "ignored offers {items:?}"),
        Ok(Some((params, answer))) => {
            let offer = offers
                .iter()
                .find_map(|o| o.clone().ok())
                .unwrap_or_else(|| panic!("accepted invalid offers {items:?}"));
            check_answer(&offer, &params, &answer);
            // The default client offers a bare client_max_window_bits and asks for nothing:
            // any valid answer is one it can take, with the same parameters.
            assert_eq!(
                DeflateConfig::default().confirm(&[answer.as_str()]),
                Ok(Some(params)),
                "default client on {answer:?}"
            );
            // The client that made this offer (offer() always carries client_max_window_bits)
            // takes the answer with the same parameters.
            if let Some(cmwb) = offer.cmwb {
                let mirror = DeflateConfig::default()
                    .with_server_no_context_takeover(offer.snct)
                    .with_client_no_context_takeover(offer.cnct)
                    .with_server_max_window_bits(offer.smwb.flatten())
                    .with_client_max_window_bits(cmwb);
                assert_eq!(parse_item(&mirror.offer(), false), Some(Ok(offer.clone())));
                assert_eq!(
                    mirror.confirm(&[answer.as_str()]),
                    Ok(Some(params)),
                    "offering client on {answer:?}"
                );
            }
        }
    }

    // The client checks an answer.
    let answers: Vec<_> = items.iter().filter_map(|i| parse_item(i, true)).collect();
    match client.confirm(&items) {
        Ok(None) => assert!(answers.is_empty(), "ignored answers {items:?}"),
        Ok(Some(p)) => {
            assert_eq!(answers.len(), 1, "confirmed several answers {items:?}");
            let a = answers[0]
                .clone()
                .unwrap_or_else(|()| panic!("confirmed an invalid answer {items:?}"));
            for bits in [p.server_max_window_bits, p.client_max_window_bits] {
                assert!((8..=15).contains(&bits), "{p:?}");
            }
            if let Some(n) = client.server_max_window_bits {
                assert!(
                    matches!(a.smwb, Some(Some(m)) if m <= clamp(n)),
                    "{items:?}"
                );
            }
            if let Some(n) = client.client_max_window_bits {
                assert!(p.client_max_window_bits <= clamp(n), "{items:?}");
            }
            assert!(!client.server_no_context_takeover || a.snct, "{items:?}");
            assert_eq!(p.server_no_context_takeover, a.snct);
            assert_eq!(
                p.client_no_context_takeover,
                a.cnct || client.client_no_context_takeover
            );
            assert_eq!(p.server_max_window_bits, a.smwb.flatten().unwrap_or(15));
            let ours = client.client_max_window_bits.map_or(15, clamp);
            assert_eq!(p.client_max_window_bits, a.cmwb.flatten().unwrap_or(ours));
        }
        Err(_) => {}
    }

    // Any client against any server: the offer is accepted and the answer confirmed, with the
    // same parameters on both sides.
    let offer = client.offer();
    let (params, answer) = server
        .accept(&[offer.as_str()])
        .unwrap_or_else(|e| panic!("{offer:?} refused: {e}"))
        .unwrap_or_else(|| panic!("{offer:?} declined"));
    check_answer(
        &parse_item(&offer, false).unwrap().unwrap(),
        &params,
        &answer,
    );
    assert_eq!(
        client.confirm(&[answer.as_str()]),
        Ok(Some(params)),
        "{offer:?} answered {answer:?}"
    );
}

/// One permessage-deflate offer or answer, parsed independently of the library.
#[derive(Debug, Default, Clone, PartialEq)]
struct Offer {
    snct: bool,
    cnct: bool,
    /// None absent, Some(None) bare, Some(Some(n)) with a value.
    smwb: Option<Option<u8>>,
    cmwb: Option<Option<u8>>,
}

/// `None` when `item` is another extension; `Some(Err)` when it breaks RFC 7692 §7.1
/// (unknown or duplicate parameter, a value where none belongs or none where one must be, a
/// window outside 8..=15 or with a leading zero). An answer's window parameters need values.
fn parse_item(item: &str, answer: bool) -> Option<Result<Offer, ()>> {
    let mut parts = item.split(';');
    let name = parts.next()?.trim();
    if !name.eq_ignore_ascii_case("permessage-deflate") {
        return None;
    }
    let mut offer = Offer::default();
    for part in parts {
        let (name, value) = match part.split_once('=') {
            Some((name, value)) => {
                let value = value.trim();
                let unquoted = (value.len() >= 2 && value.starts_with('"') && value.ends_with('"'))
                    .then(|| &value[1..value.len() - 1]);
                (name.trim(), Some(unquoted.unwrap_or(value)))
            }
            None => (part.trim(), None),
        };
        let bits = |value: Option<&str>| {
            ["8", "9", "10", "11", "12", "13", "14", "15"]
                .iter()
                .position(|b| Some(*b) == value)
                .map(|i| i as u8 + 8)
        };
        let ok = match name.to_ascii_lowercase().as_str() {
            "server_no_context_takeover" => {
                value.is_none() && !std::mem::replace(&mut offer.snct, true)
            }
            "client_no_context_takeover" => {
                value.is_none() && !std::mem::replace(&mut offer.cnct, true)
            }
            "server_max_window_bits" if offer.smwb.is_none() => {
                offer.smwb = bits(value).map(Some);
                offer.smwb.is_some()
            }
            "client_max_window_bits" if offer.cmwb.is_none() => match value {
                None if !answer => {
                    offer.cmwb = Some(None);
                    true
                }
                _ => {
                    offer.cmwb = bits(value).map(Some);
                    offer.cmwb.is_some()
                }
            },
            _ => false,
        };
        if !ok {
            return Some(Err(()));
        }
    }
    Some(Ok(offer))
}

const TOKENS: &[&str] = &[
    "permessage-deflate",
    "server_no_context_takeover",
    "client_no_context_takeover",
    "server_max_window_bits",
    "client_max_window_bits",
    "; ",
    ", ",
    "=",
    "\"",
    "8",
    "9",
    "10",
    "15",
    "16",
    "0",
    "010",
    " ",
    "PerMessage-Deflate",
    "x-webkit-deflate-frame",
    "Client_Max_Window_Bits",
    "=\"12\"",
];

fn negotiation_config(input: &mut Bytes<'_>) -> DeflateConfig {
    let flags = input.byte();
    let (server_bits, client_bits) = (input.byte(), input.byte());
    DeflateConfig::default()
        .with_server_no_context_takeover(flags & 1 != 0)
        .with_client_no_context_takeover(flags & 2 != 0)
        // Out-of-range values included: they are clamped to 8..=15.
        .with_server_max_window_bits((flags & 4 != 0).then_some(server_bits % 20))
        .with_client_max_window_bits((flags & 8 != 0).then_some(client_bits % 20))
}

fn clamp(bits: u8) -> u8 {
    bits.clamp(8, 15)
}

/// A server's answer to `offer` keeps RFC 7692 §7.1 and says what `params` say.
fn check_answer(offer: &Offer, params: &DeflateParams, answer: &str) {
    let a = parse_item(answer, true)
        .expect("the answer is not permessage-deflate")
        .unwrap_or_else(|()| panic!("invalid answer {answer:?}"));
    // §7.1.2.2: no client_max_window_bits unless offered; if offered with a value, no larger.
    match (offer.cmwb, a.cmwb) {
        (None, Some(_)) => panic!("client_max_window_bits not offered: {answer:?}"),
        (Some(Some(n)), Some(Some(m))) => assert!(m <= n, "{answer:?} for {offer:?}"),
        _ => {}
    }
    // §7.1.2.1: a requested server window is answered, no larger.
    if let Some(Some(n)) = offer.smwb {
        assert!(
            matches!(a.smwb, Some(Some(m)) if m <= n),
            "{answer:?} for {offer:?}"
        );
    }
    // §7.1.1.1: server_no_context_takeover requested is answered.
    assert!(!offer.snct || a.snct, "{answer:?} for {offer:?}");
    let expected = DeflateParams {
        server_no_context_takeover: a.snct,
        client_no_context_takeover: a.cnct,
        server_max_window_bits: a.smwb.flatten().unwrap_or(15),
        client_max_window_bits: a.cmwb.flatten().unwrap_or(15),
    };
    assert_eq!(params, &expected, "{answer:?}");
}
