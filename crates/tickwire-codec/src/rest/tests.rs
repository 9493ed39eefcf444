use proptest::prelude::*;

use super::*;
use crate::buf::WriteBuf;
use crate::http::{Method, WriteError};

const HOST: &str = "Host: api.example.com\r\n";

fn writer() -> RequestWriter {
    RequestWriter::new("api.example.com", "").unwrap()
}

fn text(buf: &WriteBuf) -> &str {
    core::str::from_utf8(buf.as_slice()).unwrap()
}

/// Decodes `%XX` escapes (the inverse of the query encoding; `+` is left alone).
fn percent_decode(encoded: &str) -> Vec<u8> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = core::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The query of a written request line, split into decoded pairs.
fn query_pairs(buf: &WriteBuf) -> Vec<(String, String)> {
    let line = text(buf).split("\r\n").next().unwrap();
    let target = line.split(' ').nth(1).unwrap();
    let Some((_, query)) = target.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            let k = String::from_utf8(percent_decode(k)).unwrap();
            let v = String::from_utf8(percent_decode(v)).unwrap();
            (k, v)
        })
        .collect()
}

#[test]
fn finish_exact_bytes_for_every_method() {
    let api = writer();
    for (method, framing) in [
        (Method::Get, ""),
        (Method::Head, ""),
        (Method::Delete, ""),
        (Method::Options, ""),
        (Method::Trace, ""),
        (Method::Post, "Content-Length: 0\r\n"),
        (Method::Put, "Content-Length: 0\r\n"),
        (Method::Patch, "Content-Length: 0\r\n"),
    ] {
        let mut buf = WriteBuf::new(256, 0);
        let len = api.request(&mut buf, method, "/v1/x").unwrap().finish();
        let expected = format!("{} /v1/x HTTP/1.1\r\n{HOST}{framing}\r\n", method.as_str());
        assert_eq!(text(&buf), expected, "{method}");
        assert_eq!(len, expected.len());
    }
}

#[test]
fn shorthand_methods() {
    let api = writer();
    type Start = for<'w> fn(
        &'w RequestWriter,
        &'w mut WriteBuf,
        &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError>;
    let cases: [(Start, Method); 7] = [
        (RequestWriter::get, Method::Get),
        (RequestWriter::post, Method::Post),
        (RequestWriter::put, Method::Put),
        (RequestWriter::delete, Method::Delete),
        (RequestWriter::patch, Method::Patch),
        (RequestWriter::head, Method::Head),
        (RequestWriter::options, Method::Options),
    ];
    for (start, method) in cases {
        let mut buf = WriteBuf::new(256, 0);
        let builder = start(&api, &mut buf, "/").unwrap();
        assert_eq!(builder.method(), method);
        builder.finish();
        assert!(text(&buf).starts_with(&format!("{} / HTTP/1.1\r\n", method.as_str())));
    }
}

#[test]
fn base_path_joining() {
    for (base, path, target) in [
        ("", "", "/"),
        ("", "/", "/"),
        ("", "x", "/x"),
        ("", "/x/y", "/x/y"),
        ("/api/v3", "ticker", "/api/v3/ticker"),
        ("/api/v3", "/ticker", "/api/v3/ticker"),
        ("/api/v3/", "/ticker", "/api/v3/ticker"),
        ("/api/v3/", "//ticker", "/api/v3/ticker"),
        ("api/v3", "ticker/", "/api/v3/ticker/"),
        ("/api", "", "/api"),
        ("/api", "/", "/api/"),
        ("/api", "?a=1", "/api?a=1"),
        ("/", "x", "/x"),
    ] {
        let api = RequestWriter::new("h", base).unwrap();
        let mut buf = WriteBuf::new(256, 0);
        api.get(&mut buf, path).unwrap().finish();
        let expected = format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(text(&buf), expected, "{base:?} + {path:?}");
    }
    assert_eq!(
        RequestWriter::new("h", "/api/v3//").unwrap().base_path(),
        "/api/v3"
    );
}

#[test]
fn query_parameters_are_percent_encoded() {
    let api = writer();
    let mut buf = WriteBuf::new(512, 0);
    api.get(&mut buf, "/search")
        .unwrap()
        .query("q", "a b&c=d+e%f/g?h#i")
        .query("sym", "BTC-USD_1.0~")
        .query("empty", "")
        .query("", "novalue-key")
        .query("caf\u{e9}", "\u{1F600}")
        .finish();
    let line = text(&buf).split("\r\n").next().unwrap();
    assert_eq!(
        line,
        "GET /search?q=a%20b%26c%3Dd%2Be%25f%2Fg%3Fh%23i&sym=BTC-USD_1.0~&empty=&=novalue-key\
         &caf%C3%A9=%F0%9F%98%80 HTTP/1.1"
    );
    assert_eq!(
        query_pairs(&buf),
        [
            ("q", "a b&c=d+e%f/g?h#i"),
            ("sym", "BTC-USD_1.0~"),
            ("empty", ""),
            ("", "novalue-key"),
            ("caf\u{e9}", "\u{1F600}"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
}

#[test]
fn query_display_and_paths_with_a_query() {
    let api = writer();
    let mut buf = WriteBuf::new(512, 0);
    api.get(&mut buf, "/x?fixed=1")
        .unwrap()
        .query_display("limit", 100)
        .query_display("px", 101.25)
        .query_display("neg", -3i64)
        .query_display("s", "a b")
        .finish();
    assert!(
        text(&buf).starts_with("GET /x?fixed=1&limit=100&px=101.25&neg=-3&s=a%20b HTTP/1.1\r\n")
    );
    for (path, target) in [("/x?", "/x?a=1"), ("/x?k=v&", "/x?k=v&a=1")] {
        let mut buf = WriteBuf::new(512, 0);
        api.get(&mut buf, path).unwrap().query("a", "1").finish();
        assert!(text(&buf).starts_with(&format!("GET {target} HTTP/1.1")));
    }
}

#[test]
fn query_display_failure_leaves_the_parameter_out() {
    struct Broken;
    impl core::fmt::Display for Broken {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("partial")?;
            Err(core::fmt::Error)
        }
    }
    let api = writer();
    let mut buf = WriteBuf::new(256, 0);
    api.get(&mut buf, "/x")
        .unwrap()
        .query_display("bad", Broken)
        .query("a", "1")
        .query_display("bad", Broken)
        .finish();
    assert!(text(&buf).starts_with("GET /x?a=1 HTTP/1.1\r\n"));
}

#[test]
fn default_headers_written_once_in_order() {
    let mut api = RequestWriter::new("api.example.com:8443", "/v1").unwrap();
    api.default_header("User-Agent", b"tickwire/0.1")
        .unwrap()
        .default_header("Accept", b"application/json")
        .unwrap();
    assert_eq!(api.host(), "api.example.com:8443");
    let mut buf = WriteBuf::new(512, 0);
    api.get(&mut buf, "a")
        .unwrap()
        .header("X-Req", b"1")
        .unwrap()
        .header_display("X-Nonce", 1_700_000_000_123u64)
        .unwrap()
        .finish();
    assert_eq!(
        text(&buf),
        "GET /v1/a HTTP/1.1\r\nHost: api.example.com:8443\r\nUser-Agent: tickwire/0.1\r\n\
         Accept: application/json\r\nX-Req: 1\r\nX-Nonce: 1700000000123\r\n\r\n"
    );
}

#[test]
fn bad_default_headers_and_hosts_are_refused() {
    let mut api = writer();
    assert_eq!(
        api.default_header("Bad Name", b"v").unwrap_err(),
        WriteError::InvalidHeaderName
    );
    assert_eq!(
        api.default_header("X", b"v\r\nEvil: 1").unwrap_err(),
        WriteError::InvalidHeaderValue
    );
    let mut buf = WriteBuf::new(256, 0);
    api.get(&mut buf, "/").unwrap().finish();
    assert_eq!(text(&buf), format!("GET / HTTP/1.1\r\n{HOST}\r\n"));
    for host in ["", "a b", "a\r\nb", "a/b", "a@b", "a\0", "h\u{e9}"] {
        assert_eq!(
            RequestWriter::new(host, "").unwrap_err(),
            WriteError::InvalidMethodOrTarget,
            "{host:?}"
        );
    }
    assert!(RequestWriter::new("[::1]:8080", "").is_ok());
    for base in ["/a b", "/a?x", "/a#f", "/a\n"] {
        assert!(RequestWriter::new("h", base).is_err(), "{base:?}");
    }
}

#[test]
fn body_and_body_fixed() {
    let api = writer();
    let mut buf = WriteBuf::new(512, 0);
    let len = api
        .post(&mut buf, "/orders")
        .unwrap()
        .header("Content-Type", b"application/json")
        .unwrap()
        .body(b"{\"qty\":3}");
    let expected = format!(
        "POST /orders HTTP/1.1\r\n{HOST}Content-Type: application/json\r\n\
         Content-Length: 9\r\n\r\n{{\"qty\":3}}"
    );
    assert_eq!(text(&buf), expected);
    assert_eq!(len, expected.len());

    let mut buf = WriteBuf::new(512, 0);
    let head_len = api.put(&mut buf, "/blob").unwrap().body_fixed(1 << 20);
    let expected = format!("PUT /blob HTTP/1.1\r\n{HOST}Content-Length: 1048576\r\n\r\n");
    assert_eq!(text(&buf), expected);
    assert_eq!(head_len, expected.len());

    // A body on a method that usually has none still gets its length.
    let mut buf = WriteBuf::new(512, 0);
    api.delete(&mut buf, "/x").unwrap().body(b"");
    assert_eq!(
        text(&buf),
        format!("DELETE /x HTTP/1.1\r\n{HOST}Content-Length: 0\r\n\r\n")
    );
}

#[derive(serde::Serialize)]
struct Order<'a> {
    symbol: &'a str,
    side: &'a str,
    qty: u32,
    price: f64,
    client_id: &'a str,
}

const ORDER: Order<'static> = Order {
    symbol: "BTC-USD",
    side: "buy",
    qty: 3,
    price: 101.25,
    client_id: "a\"quoted\" \u{e9}",
};

#[test]
fn body_with_serde_json_behind_queued_requests() {
    let api = writer();
    let mut buf = WriteBuf::new(64, 16);
    api.get(&mut buf, "/first").unwrap().finish();
    let first = buf.as_slice().to_vec();
    let len = api
        .post(&mut buf, "/orders")
        .unwrap()
        .query("test", "1")
        .header("Content-Type", b"application/json")
        .unwrap()
        .body_with(|w| serde_json::to_writer(w, &ORDER))
        .unwrap();
    let json = serde_json::to_vec(&ORDER).unwrap();
    let mut expected = first.clone();
    expected.extend_from_slice(
        format!(
            "POST /orders?test=1 HTTP/1.1\r\n{HOST}Content-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            json.len()
        )
        .as_bytes(),
    );
    expected.extend_from_slice(&json);
    assert_eq!(buf.as_slice(), expected);
    assert_eq!(len, expected.len() - first.len());
}

#[test]
fn body_with_fmt_write_and_into_forms() {
    use core::fmt::Write as _;
    let api = writer();
    let mut buf = WriteBuf::new(256, 0);
    let (out, len) = api
        .patch(&mut buf, "/p")
        .unwrap()
        .body_with_into(|w| {
            assert!(w.is_empty());
            write!(w, "qty={}", 42)?;
            w.extend_from_slice(b"&x=1");
            assert_eq!(w.len(), 10);
            Ok::<_, core::fmt::Error>(())
        })
        .unwrap();
    assert_eq!(out.len(), len);
    assert_eq!(
        text(&buf),
        format!("PATCH /p HTTP/1.1\r\n{HOST}Content-Length: 10\r\n\r\nqty=42&x=1")
    );

    let mut buf = WriteBuf::new(256, 0);
    let (out, len) = api.get(&mut buf, "/a").unwrap().finish_into();
    assert_eq!(out.len(), len);
    let (out, len) = api.post(&mut buf, "/b").unwrap().body_into(b"xy");
    assert!(out.as_slice().ends_with(b"Content-Length: 2\r\n\r\nxy"));
    let first = out.len() - len;
    let (out, head) = api.put(&mut buf, "/c").unwrap().body_fixed_into(5);
    assert_eq!(out.len(), first + len + head);
}

#[test]
fn body_with_error_removes_the_request() {
    let api = writer();
    let mut buf = WriteBuf::new(256, 8);
    buf.extend_from_slice(b"queued");
    let err = api
        .post(&mut buf, "/x")
        .unwrap()
        .header("A", b"1")
        .unwrap()
        .body_with(|w| {
            w.extend_from_slice(b"{\"half\":");
            Err("serialisation failed")
        })
        .unwrap_err();
    assert_eq!(err, "serialisation failed");
    assert_eq!(buf.as_slice(), b"queued");
}

#[test]
fn every_rejection_leaves_the_buffer_unchanged() {
    let api = writer();
    let bad_names = ["", "A B", "A:B", "A\rB", "A\nB", "A\0B", "\u{e9}"];
    let bad_values: [&[u8]; 6] = [b"a\rb", b"a\nb", b"a\0b", b"\r\nX: 1", b"\x07", b"\x7f"];
    let bad_paths = ["/a b", "/a\rb", "/a\nb", "/a\0b", "/a#b", "/\u{e9}", "/\t"];
    let mut buf = WriteBuf::new(256, 4);
    buf.extend_from_slice(b"queued");
    for path in bad_paths {
        assert_eq!(
            api.get(&mut buf, path).unwrap_err(),
            WriteError::InvalidMethodOrTarget,
            "{path:?}"
        );
        assert_eq!(buf.as_slice(), b"queued");
    }
    for name in bad_names {
        let err = api
            .get(&mut buf, "/x")
            .unwrap()
            .query("a", "1")
            .header(name, b"v")
            .unwrap_err();
        assert_eq!(err, WriteError::InvalidHeaderName, "{name:?}");
        assert_eq!(buf.as_slice(), b"queued");
        let err = api
            .get(&mut buf, "/x")
            .unwrap()
            .header_display(name, 1)
            .unwrap_err();
        assert_eq!(err, WriteError::InvalidHeaderName, "{name:?}");
        assert_eq!(buf.as_slice(), b"queued");
    }
    for value in bad_values {
        let err = api
            .post(&mut buf, "/x")
            .unwrap()
            .header("Ok", b"1")
            .unwrap()
            .header("X", value)
            .unwrap_err();
        assert_eq!(err, WriteError::InvalidHeaderValue, "{value:?}");
        assert_eq!(buf.as_slice(), b"queued");
        let display = String::from_utf8_lossy(value).into_owned();
        let err = api
            .post(&mut buf, "/x")
            .unwrap()
            .header("Ok", b"1")
            .unwrap()
            .header_display("X", display)
            .unwrap_err();
        assert_eq!(err, WriteError::InvalidHeaderValue, "{value:?}");
        assert_eq!(buf.as_slice(), b"queued");
    }
}

#[test]
fn dropped_builder_removes_its_request() {
    let api = writer();
    let mut buf = WriteBuf::new(256, 0);
    api.get(&mut buf, "/done").unwrap().finish();
    let done = buf.as_slice().to_vec();
    drop(api.get(&mut buf, "/dropped").unwrap().query("a", "b"));
    assert_eq!(buf.as_slice(), done);
    drop(
        api.get(&mut buf, "/dropped")
            .unwrap()
            .header("A", b"1")
            .unwrap(),
    );
    assert_eq!(buf.as_slice(), done);
}

#[test]
fn requests_grow_a_small_buffer() {
    let api = writer();
    let mut buf = WriteBuf::new(8, 0);
    let body = [b'z'; 3000];
    api.post(&mut buf, "/big")
        .unwrap()
        .body_with(|w| std::io::Write::write_all(w, &body))
        .unwrap();
    assert!(text(&buf).starts_with(&format!(
        "POST /big HTTP/1.1\r\n{HOST}Content-Length: 3000\r\n\r\nzzz"
    )));
    assert_eq!(
        buf.len(),
        "POST /big HTTP/1.1\r\n".len() + HOST.len() + 24 + 3000
    );
}

proptest! {
    #[test]
    fn any_query_round_trips(
        pairs in proptest::collection::vec((any::<String>(), any::<String>()), 0..6),
        path_has_query in any::<bool>(),
    ) {
        let api = writer();
        let mut buf = WriteBuf::new(64, 0);
        let path = if path_has_query { "/p?k0=v0" } else { "/p" };
        let mut builder = api.get(&mut buf, path).unwrap();
        for (k, v) in &pairs {
            builder = builder.query(k, v);
        }
        builder.finish();
        let line = text(&buf).split("\r\n").next().unwrap().to_owned();
        prop_assert!(line.bytes().all(|b| b.is_ascii_graphic() || b == b' '));
        let mut expected: Vec<(String, String)> = pairs.clone();
        if path_has_query {
            expected.insert(0, ("k0".into(), "v0".into()));
        }
        prop_assert_eq!(query_pairs(&buf), expected);
    }

    #[test]
    fn header_values_with_forbidden_bytes_are_rejected(
        mut value in proptest::collection::vec(any::<u8>(), 0..40),
        bad in prop::sample::select(
            (0u8..0x20).filter(|&b| b != b'\t').chain([0x7F]).collect::<Vec<_>>()
        ),
        at in any::<prop::sample::Index>(),
    ) {
        let at = at.index(value.len() + 1);
        value.insert(at, bad);
        let api = writer();
        let mut buf = WriteBuf::new(64, 0);
        buf.extend_from_slice(b"queued");
        let result = api.post(&mut buf, "/x").unwrap().query("a", "b").header("X", &value);
        prop_assert_eq!(result.err(), Some(WriteError::InvalidHeaderValue));
        prop_assert_eq!(buf.as_slice(), b"queued");
    }
}

#[test]
fn written_requests_parse_with_httparse() {
    let mut api = RequestWriter::new("api.example.com", "/v1").unwrap();
    api.default_header("Accept", b"*/*").unwrap();
    let mut buf = WriteBuf::new(64, 0);
    api.post(&mut buf, "orders")
        .unwrap()
        .query("q", "a b")
        .header("Content-Type", b"application/json")
        .unwrap()
        .body_with(|w| serde_json::to_writer(w, &ORDER))
        .unwrap();
    let mut headers = [httparse::EMPTY_HEADER; 8];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(buf.as_slice()).unwrap() {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial => panic!("incomplete head"),
    };
    assert_eq!(request.method, Some("POST"));
    assert_eq!(request.path, Some("/v1/orders?q=a%20b"));
    let names: Vec<_> = request.headers.iter().map(|h| h.name).collect();
    assert_eq!(names, ["Host", "Accept", "Content-Type", "Content-Length"]);
    let length: usize = core::str::from_utf8(request.headers[3].value)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(buf.len() - head_len, length);
    assert_eq!(
        &buf.as_slice()[head_len..],
        serde_json::to_vec(&ORDER).unwrap()
    );
}
