//! HTTP conformance checker: tickwire's blocking `HttpClient`, or with `--runtime tokio`
//! tickwire-tokio's async one, against a real httpbin (served by gunicorn) and nginx on
//! 127.0.0.1. `interop/http/run.sh` installs and starts both, then runs:
//!
//! ```text
//! cargo run --release -p tickwire --example http_conformance -- \
//!     --httpbin http://127.0.0.1:P --nginx http://127.0.0.1:Q --files DIR \
//!     [--runtime blocking|tokio] [--nginx-log FILE]
//! ```
//!
//! DIR holds the files nginx serves (interop/http/servers.sh makes them). Both runtimes run
//! the same cases (through `client.rs`); tokio adds the pool's case (`pool.rs`: concurrent
//! requests, connections counted by the client and, given `--nginx-log`, by nginx). Each case prints
//! `PASS name: detail` or `FAIL name: reason`; the last line is
//! `http-interop: N passed, M failed`, and the exit status is non-zero when any case failed.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Map, Value, json};
use tickwire_blocking::HttpClientError;
use tickwire_blocking::codec::http::Method;

#[path = "http_conformance/client.rs"]
mod client;
#[path = "http_conformance/nginx.rs"]
mod nginx;
#[path = "http_conformance/pool.rs"]
mod pool;

use client::{ClientResponse, HttpClient};

/// One request of the keep-alive series: method, path, query, body.
type Step = (
    Method,
    &'static str,
    &'static [(&'static str, &'static str)],
    Option<&'static str>,
);

/// A case's result: a one-line detail when it passed, the reason when it failed.
type Outcome = Result<String, String>;

/// Query parameters with every character that needs percent-encoding somewhere, in keys and
/// values; httpbin decodes them into "args".
const QUERY: &[(&str, &str)] = &[
    ("space", "a b"),
    ("amp", "x&y"),
    ("eq", "k=v"),
    ("plus", "1+1"),
    ("percent", "100%"),
    ("slash", "a/b"),
    ("question", "why?"),
    ("hash", "#frag"),
    ("unicode", "café €🚀"),
    ("empty", ""),
    ("key with space&=", "v"),
];

struct Args {
    httpbin: String,
    nginx: String,
    files: PathBuf,
    tokio: bool,
    nginx_log: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut httpbin, mut nginx, mut files) = (None, None, None);
    let (mut tokio, mut nginx_log) = (false, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--httpbin" => httpbin = Some(value),
            "--nginx" => nginx = Some(value),
            "--files" => files = Some(PathBuf::from(value)),
            "--nginx-log" => nginx_log = Some(PathBuf::from(value)),
            "--runtime" => {
                tokio = match value.as_str() {
                    "blocking" => false,
                    "tokio" => true,
                    _ => return Err(format!("--runtime is blocking or tokio, not {value:?}")),
                }
            }
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    Ok(Args {
        httpbin: httpbin.ok_or("--httpbin URL is required")?,
        nginx: nginx.ok_or("--nginx URL is required")?,
        files: files.ok_or("--files DIR is required")?,
        tokio,
        nginx_log,
    })
}

#[derive(Default)]
struct Report {
    passed: u32,
    failed: u32,
}

impl Report {
    fn check(&mut self, name: &str, outcome: Outcome) {
        match outcome {
            Ok(detail) => {
                self.passed += 1;
                println!("PASS {name}: {detail}");
            }
            Err(reason) => {
                self.failed += 1;
                println!("FAIL {name}: {reason}");
            }
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("http_conformance: {e}");
            eprintln!(
                "usage: http_conformance --httpbin URL --nginx URL --files DIR \
                 [--runtime blocking|tokio] [--nginx-log FILE]"
            );
            return ExitCode::from(2);
        }
    };
    if args.tokio
        && let Err(e) = client::use_tokio()
    {
        eprintln!("http_conformance: {e}");
        return ExitCode::FAILURE;
    }
    let runtime = if args.tokio { "tokio" } else { "blocking" };
    println!("http-conformance: the {runtime} HttpClient");
    let mut report = Report::default();
    httpbin_cases(&args.httpbin, &mut report);
    nginx::cases(&args.nginx, &args.files, &mut report);
    if let Some(runtime) = client::tokio_runtime() {
        report.check(
            "nginx_pool_concurrent_reuse",
            pool::concurrent_reuse(runtime, &args.nginx, args.nginx_log.as_deref()),
        );
    }
    println!(
        "http-interop: {} passed, {} failed",
        report.passed, report.failed
    );
    if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

fn sent<T>(what: &str, result: Result<T, HttpClientError>) -> Result<T, String> {
    result.map_err(|e| format!("{what}: {e}"))
}

fn ensure(condition: bool, reason: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(reason()) }
}

fn preview(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(120)];
    format!(
        "{:?}{}",
        String::from_utf8_lossy(shown),
        if bytes.len() > 120 { "…" } else { "" }
    )
}

fn status_is(response: &ClientResponse<'_>, code: u16) -> Result<(), String> {
    let got = response.status().0;
    ensure(got == code, || {
        format!(
            "status {got} {}, expected {code}; body {}",
            response.reason(),
            preview(response.body())
        )
    })
}

fn json_of(response: &ClientResponse<'_>) -> Result<Value, String> {
    serde_json::from_slice(response.body())
        .map_err(|e| format!("body is not JSON ({e}): {}", preview(response.body())))
}

fn is_chunked(response: &ClientResponse<'_>) -> bool {
    response
        .headers()
        .contains_token("transfer-encoding", "chunked")
}

/// httpbin's echo of a request header (Werkzeug title-cases names; compare case-insensitively).
fn echoed_header<'v>(body: &'v Value, name: &str) -> Option<&'v str> {
    body["headers"]
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str())
}

// ---------------------------------------------------------------------------------------------
// httpbin

fn httpbin_cases(base: &str, report: &mut Report) {
    let built = HttpClient::builder(base)
        .default_header("X-Tickwire-Default", "from-builder")
        .build();
    let mut c = match built {
        Ok(c) => c,
        Err(e) => return report.check("httpbin_client", Err(format!("build: {e}"))),
    };
    report.check("get_query_special_characters", get_query(&mut c));
    report.check("get_query_repeated_key", get_query_repeated(&mut c));
    report.check("post_json_body_with", post_json(&mut c));
    report.check("post_large_4mib_echo", post_large(&mut c));
    report.check("put_json", put(&mut c));
    report.check("patch_text", patch(&mut c));
    report.check("delete_with_query", delete(&mut c));
    report.check("head_get", head(&mut c));
    report.check("custom_headers_echoed", headers(&mut c));
    for code in [200, 204, 304, 404, 500] {
        report.check(&format!("status_{code}"), status(&mut c, code));
    }
    report.check("redirect_to_302_not_followed", redirect_to(&mut c, 302));
    report.check("redirect_to_307_not_followed", redirect_to(&mut c, 307));
    report.check("redirect_1_not_followed", redirect_1(&mut c));
    report.check("stream_20_chunked_json_lines", stream_lines(&mut c));
    report.check("stream_bytes_100000_chunked", stream_bytes(&mut c));
    report.check("gzip_raw_without_gzip_option", gzip_raw(&mut c));
    report.check("gzip_decoded_with_gzip_option", gzip_decoded(base));
    report.check("bytes_102400_seeded", bytes_seeded(&mut c));
    report.check("range_102400", range(&mut c));
    report.check("response_headers_echoed", response_headers(&mut c));
    report.check(
        "response_headers_repeated",
        response_headers_repeated(&mut c),
    );
    let opened = c.connections_opened();
    report.check(
        "httpbin_all_cases_one_connection",
        ensure(opened == 1, || {
            format!("connections_opened() = {opened}, expected 1")
        })
        .map(|()| "every case above ran on one keep-alive connection".into()),
    );
    report.check("keep_alive_series", keep_alive_series(base));
}

fn get_query(c: &mut HttpClient) -> Outcome {
    let mut request = c.get("/get");
    for (key, value) in QUERY {
        request = request.query(key, value);
    }
    let r = sent("GET /get", request.send())?;
    status_is(&r, 200)?;
    let body = json_of(&r)?;
    let expected: Map<String, Value> = QUERY
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect();
    ensure(body["args"] == Value::Object(expected), || {
        format!("args echoed as {}, url {}", body["args"], body["url"])
    })?;
    Ok(format!(
        "{} parameters round-tripped (space & = + % / ? # unicode, empty)",
        QUERY.len()
    ))
}

fn get_query_repeated(c: &mut HttpClient) -> Outcome {
    let r = sent(
        "GET /get",
        c.get("/get")
            .query("n", "1")
            .query_display("n", 2)
            .query("n", "three")
            .send(),
    )?;
    status_is(&r, 200)?;
    let body = json_of(&r)?;
    ensure(body["args"] == json!({"n": ["1", "2", "three"]}), || {
        format!("args echoed as {}", body["args"])
    })?;
    Ok("n=1&n=2&n=three echoed as a list".into())
}

fn order() -> Value {
    json!({
        "symbol": "BTC-USD", "side": "buy", "qty": "0.5", "price": 64000.25,
        "tags": ["post-only", "ioc"], "note": "café \"quoted\" \\ / \u{1} ✓",
        "nested": {"none": null, "yes": true, "n": -12}
    })
}

fn post_json(c: &mut HttpClient) -> Outcome {
    let payload = order();
    let r = sent(
        "POST /post",
        c.post("/post")
            .header("Content-Type", "application/json")
            .send_body_with(|w| serde_json::to_writer(w, &payload)),
    )?;
    status_is(&r, 200)?;
    let body = json_of(&r)?;
    ensure(body["json"] == payload, || {
        format!("json echoed as {}", body["json"])
    })?;
    let length = serde_json::to_vec(&payload)
        .map_err(|e| e.to_string())?
        .len()
        .to_string();
    let echoed = echoed_header(&body, "content-length");
    ensure(echoed == Some(length.as_str()), || {
        format!("Content-Length echoed as {echoed:?}, body is {length} bytes")
    })?;
    Ok(format!(
        "JSON body ({length} B) written by serde_json::to_writer echoed in \"json\""
    ))
}

fn post_large(c: &mut HttpClient) -> Outcome {
    let mut text = String::with_capacity(4 << 20);
    let mut line = 0u64;
    while text.len() < 4 << 20 {
        text.push_str(&format!(
            "line {line:09} of the tickwire large-body check\n"
        ));
        line += 1;
    }
    let r = sent(
        "POST /post",
        c.post("/post")
            .header("Content-Type", "text/plain")
            .send_body(text.as_bytes()),
    )?;
    status_is(&r, 200)?;
    let received = r.body().len();
    let body = json_of(&r)?;
    ensure(body["data"].as_str() == Some(text.as_str()), || {
        format!("\"data\" differs from the {} B sent", text.len())
    })?;
    Ok(format!(
        "{} B up, {received} B JSON back, echo identical",
        text.len()
    ))
}

fn put(c: &mut HttpClient) -> Outcome {
    let payload = order();
    let bytes = serde_json::to_vec(&payload).map_err(|e| e.to_string())?;
    let r = sent(
        "PUT /put",
        c.put("/put")
            .header("Content-Type", "application/json")
            .send_body(&bytes),
    )?;
    status_is(&r, 200)?;
    let body = json_of(&r)?;
    ensure(body["json"] == payload, || {
        format!("json echoed as {}", body["json"])
    })?;
    Ok("PUT JSON body echoed".into())
}

fn patch(c: &mut HttpClient) -> Outcome {
    let text = "patch body ✓ with\ttab and \"quotes\"";
    let r = sent(
        "PATCH /patch",
        c.patch("/patch")
            .header("Content-Type", "text/plain; charset=utf-8")
            .send_body(text),
    )?;
    status_is(&r, 200)?;
    let body = json_of(&r)?;
    ensure(body["data"] == text, || {
        format!("data echoed as {}", body["data"])
    })?;
    Ok("PATCH text body echoed in \"data\"".into())
}

fn delete(c: &mut HttpClient) -> Outcome {
    let r = sent(
        "DELETE /delete",
        c.delete("/delete").query("order_id", "42/7").send(),
    )?;
    status_is(&r, 200)?;
    let body = json_of(&r)?;
    ensure(body["args"] == json!({"order_id": "42/7"}), || {
        format!("args {}", body["args"])
    })?;
    Ok("DELETE answered 200 with the query echoed".into())
}

fn head(c: &mut HttpClient) -> Outcome {
    let before = c.connections_opened();
    let r = sent("HEAD /get", c.head("/get").send())?;
    status_is(&r, 200)?;
    ensure(r.body().is_empty(), || {
        format!("HEAD returned a body: {}", preview(r.body()))
    })?;
    let length = r.header("content-length").unwrap_or("").to_owned();
    ensure(length.parse::<u64>().is_ok_and(|n| n > 0), || {
        format!("Content-Length {length:?}, expected the GET body's length")
    })?;
    let kind = r.header("content-type").unwrap_or("").to_owned();
    ensure(kind.starts_with("application/json"), || {
        format!("Content-Type {kind:?}")
    })?;
    // The HEAD response's Content-Length announced no body: the next response must parse.
    let r = sent("GET /get after HEAD", c.get("/get").send())?;
    status_is(&r, 200)?;
    json_of(&r)?;
    let after = c.connections_opened();
    ensure(after == before, || {
        format!("connections {before} -> {after} around HEAD")
    })?;
    Ok(format!(
        "no body, Content-Length {length}, Content-Type {kind}; next GET on the same connection"
    ))
}

fn headers(c: &mut HttpClient) -> Outcome {
    let quoted = "a=b; c=\"d\", e/f";
    let r = sent(
        "GET /headers",
        c.get("/headers")
            .header("X-Tickwire-Case", "custom-headers")
            .header("X-Quoted", quoted)
            .header_display("X-Number", 1234567)
            .send(),
    )?;
    status_is(&r, 200)?;
    let body = json_of(&r)?;
    for (name, value) in [
        ("X-Tickwire-Case", "custom-headers"),
        ("X-Quoted", quoted),
        ("X-Number", "1234567"),
        ("X-Tickwire-Default", "from-builder"),
    ] {
        let echoed = echoed_header(&body, name);
        ensure(echoed == Some(value), || {
            format!("{name} echoed as {echoed:?}, sent {value:?}")
        })?;
    }
    let agent = echoed_header(&body, "user-agent").unwrap_or("");
    ensure(agent.starts_with("tickwire/"), || {
        format!("User-Agent echoed as {agent:?}")
    })?;
    Ok(format!(
        "3 request headers, the builder's default header and User-Agent {agent} echoed"
    ))
}

fn status(c: &mut HttpClient, code: u16) -> Outcome {
    let r = sent("GET /status", c.get(&format!("/status/{code}")).send())?;
    status_is(&r, code)?;
    if code == 204 || code == 304 {
        ensure(r.body().is_empty(), || {
            format!("{code} with a body {}", preview(r.body()))
        })?;
    }
    Ok(format!(
        "{} {}, {} B body",
        r.status().0,
        r.reason(),
        r.body().len()
    ))
}

fn redirect_to(c: &mut HttpClient, code: u16) -> Outcome {
    // Port 9 (discard) on loopback: were the redirect followed, it would fail loudly.
    let target = "http://127.0.0.1:9/never-followed?x=1&y=%20";
    let before = c.connections_opened();
    let r = sent(
        "GET /redirect-to",
        c.get("/redirect-to")
            .query("url", target)
            .query_display("status_code", code)
            .send(),
    )?;
    status_is(&r, code)?;
    ensure(r.is_redirect(), || "is_redirect() is false".into())?;
    ensure(r.location() == Some(target), || {
        format!("Location {:?}", r.location())
    })?;
    let after = c.connections_opened();
    ensure(after == before, || {
        format!("connections {before} -> {after}: followed?")
    })?;
    Ok(format!(
        "{code} reported with Location {target}, not followed"
    ))
}

fn redirect_1(c: &mut HttpClient) -> Outcome {
    let r = sent("GET /redirect/1", c.get("/redirect/1").send())?;
    status_is(&r, 302)?;
    ensure(r.is_redirect(), || "is_redirect() is false".into())?;
    ensure(r.location() == Some("/get"), || {
        format!("Location {:?}", r.location())
    })?;
    ensure(serde_json::from_slice::<Value>(r.body()).is_err(), || {
        "the body is JSON: /get was fetched".into()
    })?;
    Ok(format!(
        "302 with Location /get and the redirect page ({} B), not followed",
        r.body().len()
    ))
}

fn stream_lines(c: &mut HttpClient) -> Outcome {
    let r = sent("GET /stream/20", c.get("/stream/20").send())?;
    status_is(&r, 200)?;
    ensure(is_chunked(&r), || "not chunked".into())?;
    let text = r.text().ok_or("body is not UTF-8")?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    ensure(lines.len() == 20, || {
        format!("{} lines, expected 20", lines.len())
    })?;
    for (i, line) in lines.iter().enumerate() {
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("line {i} is not JSON: {e}"))?;
        ensure(value["id"] == i, || {
            format!("line {i} has id {}", value["id"])
        })?;
    }
    Ok(format!(
        "chunked, 20 JSON lines with ids 0..19 ({} B)",
        r.body().len()
    ))
}

fn stream_bytes(c: &mut HttpClient) -> Outcome {
    let mut bodies = Vec::new();
    for _ in 0..2 {
        let r = sent(
            "GET /stream-bytes",
            c.get("/stream-bytes/100000")
                .query("seed", "1")
                .query("chunk_size", "1000")
                .send(),
        )?;
        status_is(&r, 200)?;
        ensure(is_chunked(&r), || "not chunked".into())?;
        ensure(r.body().len() == 100_000, || {
            format!("{} bytes, expected 100000", r.body().len())
        })?;
        bodies.push(r.body().to_vec());
    }
    ensure(bodies[0] == bodies[1], || {
        "two seeded responses differ".into()
    })?;
    Ok("chunked in 1000 B chunks, 100000 B, identical across two seeded requests".into())
}

fn gzip_raw(c: &mut HttpClient) -> Outcome {
    let r = sent("GET /gzip", c.get("/gzip").send())?;
    status_is(&r, 200)?;
    ensure(r.header("content-encoding") == Some("gzip"), || {
        "no Content-Encoding: gzip".into()
    })?;
    ensure(!r.was_decompressed(), || {
        "decoded although gzip was not asked for".into()
    })?;
    ensure(r.body().starts_with(&[0x1f, 0x8b, 0x08]), || {
        format!("not gzip bytes: {}", preview(r.body()))
    })?;
    Ok(format!(
        "{} B of raw gzip (1f 8b 08 ...) handed through",
        r.body().len()
    ))
}

fn gzip_decoded(base: &str) -> Outcome {
    let mut c = sent("build", HttpClient::builder(base).gzip(true).build())?;
    let r = sent("GET /gzip", c.get("/gzip").send())?;
    status_is(&r, 200)?;
    ensure(r.header("content-encoding") == Some("gzip"), || {
        "no Content-Encoding: gzip".into()
    })?;
    ensure(r.was_decompressed(), || {
        "was_decompressed() is false".into()
    })?;
    let wire = r.raw().body().len();
    let body = json_of(&r)?;
    ensure(body["gzipped"] == true, || {
        format!("gzipped = {}", body["gzipped"])
    })?;
    let accept = echoed_header(&body, "accept-encoding").unwrap_or("");
    ensure(accept.contains("gzip"), || {
        format!("Accept-Encoding sent as {accept:?}")
    })?;
    Ok(format!(
        "{wire} B gzip on the wire -> {} B JSON, \"gzipped\": true",
        r.body().len()
    ))
}

fn bytes_seeded(c: &mut HttpClient) -> Outcome {
    let mut bodies = Vec::new();
    for _ in 0..2 {
        let r = sent(
            "GET /bytes",
            c.get("/bytes/102400").query("seed", "7").send(),
        )?;
        status_is(&r, 200)?;
        ensure(r.body().len() == 102_400, || {
            format!("{} bytes", r.body().len())
        })?;
        bodies.push(r.body().to_vec());
    }
    ensure(bodies[0] == bodies[1], || {
        "two seeded responses differ".into()
    })?;
    Ok("102400 B (httpbin's largest /bytes), identical across two seeded requests".into())
}

fn range(c: &mut HttpClient) -> Outcome {
    let r = sent("GET /range", c.get("/range/102400").send())?;
    status_is(&r, 200)?;
    let body = r.body();
    ensure(body.len() == 102_400, || format!("{} bytes", body.len()))?;
    let bad = body
        .iter()
        .enumerate()
        .find(|&(i, &b)| b != b'a' + (i % 26) as u8);
    ensure(bad.is_none(), || {
        format!("byte {bad:?} differs from a..z repeated")
    })?;
    Ok("102400 B of a..z repeated, every byte checked".into())
}

fn response_headers(c: &mut HttpClient) -> Outcome {
    let r = sent(
        "GET /response-headers",
        c.get("/response-headers").query("X-Foo", "bar").send(),
    )?;
    status_is(&r, 200)?;
    ensure(r.header("x-foo") == Some("bar"), || {
        format!("X-Foo: {:?}", r.header("x-foo"))
    })?;
    let body = json_of(&r)?;
    ensure(body["X-Foo"] == "bar", || format!("body {body}"))?;
    Ok("X-Foo: bar in the head and the body".into())
}

fn response_headers_repeated(c: &mut HttpClient) -> Outcome {
    let r = sent(
        "GET /response-headers",
        c.get("/response-headers")
            .query("X-Foo", "bar")
            .query("X-Foo", "baz")
            .send(),
    )?;
    status_is(&r, 200)?;
    let values: Vec<&[u8]> = r.headers().get_all("x-foo").collect();
    ensure(values == [b"bar".as_slice(), b"baz"], || {
        format!(
            "X-Foo values {:?}",
            values.iter().map(|v| preview(v)).collect::<Vec<_>>()
        )
    })?;
    Ok("two X-Foo fields, in order".into())
}

/// A mixed series on a fresh client. The expected number of connections is 1 plus one per
/// response that said the connection ends (`keep_alive()` false), which gunicorn's gthread
/// worker with --keep-alive does not do for any of these.
fn keep_alive_series(base: &str) -> Outcome {
    let mut c = sent("build", HttpClient::new(base))?;
    let steps: &[Step] = &[
        (Method::Get, "/get", &[("i", "1")], None),
        (Method::Head, "/get", &[], None),
        (Method::Post, "/post", &[], Some("{\"a\":1}")),
        (Method::Put, "/put", &[], Some("put")),
        (Method::Patch, "/patch", &[], Some("patch")),
        (Method::Delete, "/delete", &[], None),
        (Method::Get, "/status/204", &[], None),
        (Method::Get, "/status/304", &[], None),
        (Method::Get, "/status/404", &[], None),
        (Method::Get, "/status/500", &[], None),
        (Method::Get, "/redirect/1", &[], None),
        (Method::Get, "/stream/5", &[], None),
        (
            Method::Get,
            "/stream-bytes/5000",
            &[("chunk_size", "100")],
            None,
        ),
        (Method::Get, "/gzip", &[], None),
        (Method::Get, "/bytes/65536", &[], None),
        (Method::Get, "/response-headers", &[("X-A", "b")], None),
        (Method::Options, "/get", &[], None),
        (Method::Get, "/get", &[("i", "last")], None),
    ];
    let mut closes = Vec::new();
    let rounds = 3;
    for round in 0..rounds {
        for (i, &(method, path, query, body)) in steps.iter().enumerate() {
            let mut request = c.request(method, path);
            for (k, v) in query {
                request = request.query(k, v);
            }
            let result = match body {
                Some(body) => request.send_body(body),
                None => request.send(),
            };
            let r = sent(&format!("{} {path}", method.as_str()), result)?;
            ensure(r.status().0 < 600, || "bad status".into())?;
            let last = round == rounds - 1 && i == steps.len() - 1;
            if !r.keep_alive() && !last {
                closes.push(format!("{} {path}", method.as_str()));
            }
        }
    }
    let requests = rounds * steps.len();
    let opened = c.connections_opened();
    let expected = 1 + closes.len() as u64;
    ensure(opened == expected, || {
        format!(
            "{requests} requests opened {opened} connections, expected {expected} (closed by the server after: {closes:?})"
        )
    })?;
    if closes.is_empty() {
        Ok(format!(
            "{requests} requests of 7 methods (HEAD, 204, 304, chunked, gzip among them): connections_opened() = 1"
        ))
    } else {
        Ok(format!(
            "{requests} requests, {opened} connections: the server closed after {closes:?} (expected reconnects)"
        ))
    }
}
