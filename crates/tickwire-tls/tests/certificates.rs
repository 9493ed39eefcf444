//! What the configuration decides, seen through a client and a server codec in memory:
//! certificate verification and the error each failure maps to (and the alert the peer gets),
//! ALPN, protocol versions, session resumption, verification turned off, mutual TLS, and the
//! configuration errors of the builders.

#[expect(dead_code, reason = "long chains and 0.5-RTT serve the codec tests")]
mod support;

use support::{
    Ca, Identity, Pair, client_builder, client_config, drain, leaf_params, pki, server_config,
    server_config_for, tls12_server_config,
};
use tickwire_tls::{
    AlertDescription, ClientTlsConfig, ServerTlsConfig, TlsCodec, TlsError, TlsVersion,
};

/// Runs a handshake that the client must refuse with `expected`; then delivers the client's
/// alert and checks that the server learns `alert`.
fn client_refuses(
    client: &ClientTlsConfig,
    server: &ServerTlsConfig,
    host: &str,
    expected: &TlsError,
    alert: AlertDescription,
) {
    let mut pair = Pair::with_host(client, server, host);
    assert_eq!(pair.handshake().as_ref(), Err(expected));
    assert_eq!(pair.client.error(), Some(expected));
    let wire = drain(&mut pair.client);
    assert_eq!(
        pair.server.read_tls(&wire),
        Err(TlsError::AlertReceived(alert))
    );
}

/// Runs a handshake that the server must refuse; then delivers the server's alert and
/// returns what the client makes of it.
fn server_refuses(client: &ClientTlsConfig, server: &ServerTlsConfig) -> TlsError {
    let mut pair = Pair::new(client, server);
    let error = pair.handshake().unwrap_err();
    assert_eq!(pair.server.error(), Some(&error));
    let alert = drain(&mut pair.server);
    pair.client.read_tls(&alert).unwrap_err()
}

// --- certificate verification ---

#[test]
fn a_certificate_from_an_unknown_ca_is_untrusted() {
    let stranger = Ca::root("someone else's root").leaf();
    let server = server_config_for(&stranger);
    let error = Pair::new(&client_config(), &server)
        .handshake()
        .unwrap_err();
    assert!(
        matches!(error, TlsError::UntrustedCertificate(_)),
        "{error:?}"
    );
    client_refuses(
        &client_config(),
        &server,
        "localhost",
        &error,
        AlertDescription::UnknownCA,
    );
    // Mozilla's roots do not know the test root either.
    let mozilla = ClientTlsConfig::builder().build().unwrap();
    let error = Pair::new(&mozilla, &server_config())
        .handshake()
        .unwrap_err();
    assert!(
        matches!(error, TlsError::UntrustedCertificate(_)),
        "{error:?}"
    );
}

#[test]
fn a_certificate_for_another_name_is_a_hostname_mismatch() {
    let error = Pair::with_host(&client_config(), &server_config(), "example.com")
        .handshake()
        .unwrap_err();
    assert!(matches!(error, TlsError::HostnameMismatch(_)), "{error:?}");
    client_refuses(
        &client_config(),
        &server_config(),
        "example.com",
        &error,
        AlertDescription::BadCertificate,
    );
    // An IP address is checked against the IP SANs.
    let error = Pair::with_host(&client_config(), &server_config(), "10.0.0.1")
        .handshake()
        .unwrap_err();
    assert!(matches!(error, TlsError::HostnameMismatch(_)), "{error:?}");
}

#[test]
fn ip_addresses_match_ip_sans_with_or_without_brackets() {
    for host in ["127.0.0.1", "::1", "[::1]"] {
        let mut pair = Pair::with_host(&client_config(), &server_config(), host);
        pair.handshake().unwrap_or_else(|e| panic!("{host}: {e}"));
        // No SNI for an IP address (RFC 6066 §3).
        assert_eq!(pair.server.server_name(), None, "{host}");
    }
}

#[test]
fn an_expired_certificate_and_one_not_valid_yet() {
    let mut params = leaf_params(&["localhost"]);
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    let expired = server_config_for(&pki().ca.leaf_with(params));
    client_refuses(
        &client_config(),
        &expired,
        "localhost",
        &TlsError::CertificateExpired,
        AlertDescription::CertificateExpired,
    );

    let mut params = leaf_params(&["localhost"]);
    params.not_before = rcgen::date_time_ymd(4000, 1, 1);
    params.not_after = rcgen::date_time_ymd(4001, 1, 1);
    let future = server_config_for(&pki().ca.leaf_with(params));
    client_refuses(
        &client_config(),
        &future,
        "localhost",
        &TlsError::CertificateNotYetValid,
        AlertDescription::CertificateExpired,
    );
}

#[test]
fn a_ca_certificate_presented_as_the_server_certificate_is_refused() {
    // webpki refuses a CA certificate as an end entity even when it is the trusted root.
    let ca = Ca::root("a root that serves");
    let key = ca.key_pem();
    let identity = Identity {
        chain_pem: ca.pem().to_owned(),
        key_pem: key,
    };
    let client = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(ca.pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let error = Pair::new(&client, &server_config_for(&identity))
        .handshake()
        .unwrap_err();
    match error {
        TlsError::BadCertificate(why) => assert!(why.contains("CaUsedAsEndEntity"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn verification_turned_off_accepts_an_untrusted_misnamed_certificate() {
    let stranger = server_config_for(&Ca::root("untrusted").leaf());
    let insecure = ClientTlsConfig::builder()
        .dangerous()
        .disable_certificate_verification()
        .build()
        .unwrap();
    let mut pair = Pair::with_host(&insecure, &stranger, "not-the-name.example");
    pair.handshake().unwrap();
    pair.server.write_plaintext(b"hello anyway").unwrap();
    pair.server_to_client().unwrap();
    assert_eq!(pair.client_received, b"hello anyway");
    // TLS 1.2 too: its handshake signature is still checked, and passes.
    let stranger12 = tls12_server_config(&Ca::root("untrusted").leaf());
    let mut pair = Pair::with_host(&insecure, &stranger12, "not-the-name.example");
    pair.handshake().unwrap();
    assert_eq!(pair.client.protocol_version(), Some(TlsVersion::Tls12));
}

// --- ALPN and versions ---

#[test]
fn alpn_picks_the_protocol_both_sides_know() {
    let client = client_builder().alpn(["h2", "http/1.1"]).build().unwrap();
    let server = ServerTlsConfig::builder(
        pki().leaf.chain_pem.as_bytes(),
        pki().leaf.key_pem.as_bytes(),
    )
    .unwrap()
    .alpn(["http/1.1"])
    .build()
    .unwrap();
    let pair = Pair::connected(&client, &server);
    assert_eq!(pair.client.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(pair.server.alpn_protocol(), Some(&b"http/1.1"[..]));
}

#[test]
fn alpn_with_no_common_protocol_fails_with_an_alert_to_the_client() {
    let client = client_builder().alpn(["h2"]).build().unwrap();
    let server = ServerTlsConfig::builder(
        pki().leaf.chain_pem.as_bytes(),
        pki().leaf.key_pem.as_bytes(),
    )
    .unwrap()
    .alpn(["http/1.1"])
    .build()
    .unwrap();
    assert_eq!(
        server_refuses(&client, &server),
        TlsError::AlertReceived(AlertDescription::NoApplicationProtocol)
    );
}

#[test]
fn a_tls13_only_client_and_a_tls12_only_server_fail_with_an_alert() {
    let client = client_builder().tls13_only(true).build().unwrap();
    let server = tls12_server_config(&pki().leaf);
    assert_eq!(
        server_refuses(&client, &server),
        TlsError::AlertReceived(AlertDescription::ProtocolVersion)
    );
}

#[test]
fn a_tls13_only_server_speaks_tls13() {
    let server = ServerTlsConfig::builder(
        pki().leaf.chain_pem.as_bytes(),
        pki().leaf.key_pem.as_bytes(),
    )
    .unwrap()
    .tls13_only(true)
    .build()
    .unwrap();
    let pair = Pair::connected(&client_config(), &server);
    assert_eq!(pair.server.protocol_version(), Some(TlsVersion::Tls13));
}

// --- resumption ---

#[test]
fn a_second_connection_from_the_same_config_resumes() {
    for server in [server_config(), tls12_server_config(&pki().leaf)] {
        let client = client_config();
        let first = Pair::connected(&client, &server);
        assert!(!first.client.is_resumed() && !first.server.is_resumed());
        let mut second = Pair::connected(&client, &server);
        assert!(
            second.client.is_resumed(),
            "{:?}",
            second.client.protocol_version()
        );
        assert!(second.server.is_resumed());
        second.client.write_plaintext(b"resumed").unwrap();
        second.client_to_server().unwrap();
        assert_eq!(second.server_received, b"resumed");
    }
}

#[test]
fn without_resumption_every_handshake_is_full() {
    let client = client_builder().session_resumption(false).build().unwrap();
    Pair::connected(&client, &server_config());
    let second = Pair::connected(&client, &server_config());
    assert!(!second.client.is_resumed());
}

// --- mutual TLS ---

#[test]
fn mutual_tls_requires_and_checks_the_client_certificate() {
    let server = ServerTlsConfig::builder(
        pki().leaf.chain_pem.as_bytes(),
        pki().leaf.key_pem.as_bytes(),
    )
    .unwrap()
    .client_auth_required(pki().ca.pem().as_bytes())
    .unwrap()
    .build()
    .unwrap();
    let anonymous = Pair::new(&client_config(), &server).handshake();
    assert_eq!(anonymous, Err(TlsError::ClientCertificateRequired));

    let identity = pki().ca.leaf_with(leaf_params(&["client.example"]));
    let client = client_builder()
        .client_identity_pem(identity.chain_pem.as_bytes(), identity.key_pem.as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let pair = Pair::connected(&client, &server);
    assert_eq!(pair.server.peer_certificates().map(<[_]>::len), Some(1));
}

// --- configuration errors ---

const BROKEN_PEM: &[u8] =
    b"-----BEGIN CERTIFICATE-----\n!!! not base64 !!!\n-----END CERTIFICATE-----\n";

fn is_config(result: Result<impl std::fmt::Debug, TlsError>) -> bool {
    matches!(result, Err(TlsError::Config(_)))
}

#[test]
fn unusable_pem_is_a_configuration_error() {
    let leaf = &pki().leaf;
    assert!(is_config(ServerTlsConfig::builder(
        BROKEN_PEM,
        leaf.key_pem.as_bytes()
    )));
    assert!(is_config(
        ClientTlsConfig::builder().add_root_pem(BROKEN_PEM)
    ));
    assert!(is_config(tickwire_tls::certificates_from_pem(b"garbage")));
    // No certificate in it: nothing, or a key where the chain goes.
    assert!(is_config(ServerTlsConfig::builder(
        b"",
        leaf.key_pem.as_bytes()
    )));
    assert!(is_config(ServerTlsConfig::builder(
        leaf.key_pem.as_bytes(),
        leaf.key_pem.as_bytes()
    )));
    assert!(is_config(
        ClientTlsConfig::builder().add_root_pem(b"just text")
    ));
    // No key where the key goes.
    assert!(is_config(ServerTlsConfig::builder(
        leaf.chain_pem.as_bytes(),
        leaf.chain_pem.as_bytes()
    )));
    // A key block that is no key: refused when the configuration is built.
    let junk_key = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    let client = client_builder()
        .client_identity_pem(leaf.chain_pem.as_bytes(), junk_key)
        .unwrap();
    assert!(is_config(client.build()));
    assert!(is_config(ServerTlsConfig::builder_from_files(
        "/nonexistent/cert.pem",
        "/nonexistent/key.pem"
    )));
}

#[test]
fn a_key_that_does_not_match_the_certificate_is_a_configuration_error() {
    let other = pki().ca.leaf();
    let builder =
        ServerTlsConfig::builder(pki().leaf.chain_pem.as_bytes(), other.key_pem.as_bytes())
            .unwrap();
    let error = builder.build().unwrap_err();
    assert!(matches!(error, TlsError::Config(_)), "{error:?}");
    assert!(
        error.to_string().starts_with("TLS configuration: "),
        "{error}"
    );
}

#[test]
fn a_host_that_cannot_be_a_server_name_is_refused() {
    for host in ["bad name!", "", "exa mple.com", "[::1", "::1]", "[[::1]]"] {
        let error = TlsCodec::client(&client_config(), host).unwrap_err();
        assert!(
            matches!(error, TlsError::InvalidServerName(_)),
            "{host:?}: {error:?}"
        );
    }
    assert_eq!(
        TlsCodec::client(&client_config(), "bad name!").unwrap_err(),
        TlsError::InvalidServerName("bad name!".into())
    );
}

#[test]
fn errors_wrapped_in_io_error_keep_their_text() {
    let error = TlsError::AlertReceived(AlertDescription::HandshakeFailure);
    let io = error.clone().into_io();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidData);
    assert_eq!(io.to_string(), error.to_string());
    assert_eq!(
        TlsError::NotTls.to_string(),
        "peer sent data that is not TLS (plaintext on a TLS port?)"
    );
}

#[test]
fn the_shared_default_config_is_one_config() {
    let a = ClientTlsConfig::shared_default();
    let b = ClientTlsConfig::shared_default();
    assert!(std::sync::Arc::ptr_eq(a.rustls(), b.rustls()));
    TlsCodec::client(&a, "example.com").unwrap();
}
