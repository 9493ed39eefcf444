//! permessage-deflate negotiation: the client's offer, the server's choice and answer, the
//! client's check of it (RFC 7692 §7.1).

use super::tests::params;
use super::*;

fn answer(config: &DeflateConfig, items: &[&str]) -> Result<Option<String>, NegotiationError> {
    config.accept(items).map(|r| r.map(|(_, answer)| answer))
}

#[test]
fn client_offer_lists_what_is_configured() {
    assert_eq!(
        DeflateConfig::default().offer(),
        "permessage-deflate; client_max_window_bits"
    );
    let config = DeflateConfig {
        server_no_context_takeover: true,
        client_no_context_takeover: true,
        server_max_window_bits: Some(10),
        client_max_window_bits: Some(12),
        ..DeflateConfig::default()
    };
    assert_eq!(
        config.offer(),
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
         server_max_window_bits=10; client_max_window_bits=12"
    );
}

#[test]
fn server_accepts_chromium_and_autobahn_offers() {
    let config = DeflateConfig::default();
    // Chromium's offer.
    let (p, a) = config
        .accept(&["permessage-deflate; client_max_window_bits"])
        .unwrap()
        .unwrap();
    assert_eq!(a, "permessage-deflate");
    assert_eq!(p, params(false, false, 15, 15));
    // Autobahn 13.3: server window 9 requested.
    assert_eq!(
        answer(
            &config,
            &["permessage-deflate; server_no_context_takeover; server_max_window_bits=9"]
        )
        .unwrap()
        .unwrap(),
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=9"
    );
    // Quoted values are allowed (RFC 7692 §7.1), names are case-insensitive.
    let (p, a) = config
        .accept(&["Permessage-Deflate; Client_Max_Window_Bits=\"10\""])
        .unwrap()
        .unwrap();
    assert_eq!(a, "permessage-deflate; client_max_window_bits=10");
    assert_eq!(p.client_max_window_bits, 10);
}

#[test]
fn server_chooses_the_first_deflate_offer_and_skips_other_extensions() {
    let config = DeflateConfig::default();
    let items = [
        "x-webkit-deflate-frame",
        "permessage-deflate; server_max_window_bits=10",
        "permessage-deflate",
    ];
    assert_eq!(
        answer(&config, &items).unwrap().unwrap(),
        "permessage-deflate; server_max_window_bits=10"
    );
    assert_eq!(answer(&config, &["x-webkit-deflate-frame"]).unwrap(), None);
    assert_eq!(answer(&config, &[] as &[&str]).unwrap(), None);
}

#[test]
fn server_config_limits_and_requests() {
    let config = DeflateConfig {
        server_no_context_takeover: true,
        client_no_context_takeover: true,
        server_max_window_bits: Some(11),
        client_max_window_bits: Some(10),
        ..DeflateConfig::default()
    };
    let (p, a) = config
        .accept(&["permessage-deflate; client_max_window_bits; server_max_window_bits=13"])
        .unwrap()
        .unwrap();
    assert_eq!(
        a,
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
         server_max_window_bits=11; client_max_window_bits=10"
    );
    assert_eq!(p, params(true, true, 11, 10));
    // A client that cannot limit its window is still accepted, at 15 bits.
    let (p, a) = config.accept(&["permessage-deflate"]).unwrap().unwrap();
    assert!(!a.contains("client_max_window_bits"), "{a}");
    assert_eq!(p.client_max_window_bits, 15);
}

#[test]
fn server_rejects_invalid_offers() {
    let config = DeflateConfig::default();
    let cases: &[(&str, NegotiationError)] = &[
        (
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            NegotiationError::DuplicateParameter("server_no_context_takeover".into()),
        ),
        (
            "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
            NegotiationError::DuplicateParameter("client_max_window_bits".into()),
        ),
        (
            "permessage-deflate; server_max_window_bits",
            NegotiationError::InvalidValue("server_max_window_bits".into()),
        ),
        (
            "permessage-deflate; server_max_window_bits=7",
            NegotiationError::InvalidValue("server_max_window_bits=7".into()),
        ),
        (
            "permessage-deflate; client_max_window_bits=16",
            NegotiationError::InvalidValue("client_max_window_bits=16".into()),
        ),
        (
            "permessage-deflate; client_max_window_bits=010",
            NegotiationError::InvalidValue("client_max_window_bits=010".into()),
        ),
        (
            "permessage-deflate; server_no_context_takeover=1",
            NegotiationError::InvalidValue("server_no_context_takeover=1".into()),
        ),
        (
            "permessage-deflate; mystery",
            NegotiationError::UnknownParameter("mystery".into()),
        ),
    ];
    for (offer, expected) in cases {
        assert_eq!(config.accept(&[offer]).unwrap_err(), *expected, "{offer}");
        // §5: an invalid offer is declined and a later valid one chosen.
        assert_eq!(
            answer(
                &config,
                &[offer, "permessage-deflate; server_max_window_bits=12"]
            )
            .unwrap(),
            Some("permessage-deflate; server_max_window_bits=12".to_owned()),
            "{offer}"
        );
    }
}

#[test]
fn client_confirms_valid_answers() {
    let config = DeflateConfig::default();
    assert_eq!(config.confirm(&[] as &[&str]).unwrap(), None);
    assert_eq!(
        config.confirm(&["permessage-deflate"]).unwrap(),
        Some(params(false, false, 15, 15))
    );
    // Autobahn 13.5-style answer: client context off and a 9-bit client window.
    assert_eq!(
        config
            .confirm(&["permessage-deflate; client_no_context_takeover; client_max_window_bits=9"])
            .unwrap(),
        Some(params(false, true, 15, 9))
    );
    assert_eq!(
        config
            .confirm(&["permessage-deflate; server_no_context_takeover; server_max_window_bits=10"])
            .unwrap(),
        Some(params(true, false, 10, 15))
    );
}

#[test]
fn client_rejects_answers_it_did_not_offer() {
    let asking = DeflateConfig {
        server_no_context_takeover: true,
        server_max_window_bits: Some(10),
        client_max_window_bits: Some(12),
        ..DeflateConfig::default()
    };
    let bad: &[(&DeflateConfig, &str)] = &[
        // Asked for a 10-bit server window; a larger one or none breaks §7.1.2.1.
        (
            &asking,
            "permessage-deflate; server_no_context_takeover; server_max_window_bits=11",
        ),
        (&asking, "permessage-deflate; server_no_context_takeover"),
        // Asked for no server context takeover; not confirmed.
        (&asking, "permessage-deflate; server_max_window_bits=10"),
        // Offered a 12-bit client window; asked to use 13.
        (
            &asking,
            "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; \
             client_max_window_bits=13",
        ),
    ];
    for (config, response) in bad {
        assert!(
            matches!(
                config.confirm(&[response]),
                Err(NegotiationError::NotOffered(_))
            ),
            "{response}"
        );
    }
    let config = DeflateConfig::default();
    // A bare client_max_window_bits is only allowed in an offer.
    assert!(matches!(
        config.confirm(&["permessage-deflate; client_max_window_bits"]),
        Err(NegotiationError::InvalidValue(_))
    ));
    assert!(matches!(
        config.confirm(&["permessage-deflate", "permessage-deflate"]),
        Err(NegotiationError::DuplicateExtension(_))
    ));
    assert!(matches!(
        config.confirm(&["permessage-deflate; x=1"]),
        Err(NegotiationError::UnknownParameter(_))
    ));
}
