//! The nginx half of the HTTP conformance checker: 10,000 sequential GETs on one keep-alive
//! connection with every body checked, gzip-encoded files, HEAD and 404 on one connection.

use std::path::Path;
use std::time::Instant;

use super::client::HttpClient;
use super::{Outcome, Report, ensure, is_chunked, sent, status_is};

/// The files interop/http/servers.sh generates, with their sizes.
const FILES: &[(&str, usize)] = &[
    ("0b.bin", 0),
    ("1b.bin", 1),
    ("100b.bin", 100),
    ("1k.bin", 1024),
    ("64k.bin", 65536),
    ("1m.bin", 1 << 20),
];

/// Sequential GETs on one connection, rotating through each file plain and chunked.
const NGINX_REQUESTS: usize = 10_000;

/// Byte i of a generated file of n bytes (the formula of interop/http/servers.sh).
fn file_byte(i: usize, n: usize) -> u8 {
    (((i % 251) * 31 + i / 251 + n) & 255) as u8
}

pub(super) fn cases(base: &str, dir: &Path, report: &mut Report) {
    let files = load_files(dir);
    let files = match files {
        Ok(files) => {
            report.check(
                "generated_files",
                Ok(format!(
                    "{} files of 0 B .. 1 MiB match the formula",
                    files.len()
                )),
            );
            files
        }
        Err(reason) => return report.check("generated_files", Err(reason)),
    };
    report.check(
        "nginx_10000_requests_one_connection",
        nginx_sequential(base, &files),
    );
    report.check("nginx_gzip_decoded", nginx_gzip(base, &files));
    report.check("nginx_head_and_404_keep_connection", nginx_head_404(base));
}

fn load_files(dir: &Path) -> Result<Vec<(&'static str, Vec<u8>)>, String> {
    FILES
        .iter()
        .map(|&(name, size)| {
            let path = dir.join(name);
            let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            ensure(data.len() == size, || {
                format!("{name}: {} bytes, expected {size}", data.len())
            })?;
            let bad = data
                .iter()
                .enumerate()
                .position(|(i, &b)| b != file_byte(i, size));
            ensure(bad.is_none(), || {
                format!("{name}: byte {bad:?} is not the generated one")
            })?;
            Ok((name, data))
        })
        .collect()
}

fn nginx_sequential(base: &str, files: &[(&str, Vec<u8>)]) -> Outcome {
    let mut c = sent("build", HttpClient::new(base))?;
    let targets: Vec<(String, &[u8], bool)> = ["/files/", "/chunked/"]
        .iter()
        .flat_map(|prefix| {
            files.iter().map(move |(name, data)| {
                // sub_filter leaves an empty body with its Content-Length: 0.
                let chunked = *prefix == "/chunked/" && !data.is_empty();
                (format!("{prefix}{name}"), data.as_slice(), chunked)
            })
        })
        .collect();
    let started = Instant::now();
    let (mut bytes, mut chunked_seen) = (0u64, 0u32);
    for i in 0..NGINX_REQUESTS {
        let (path, expected, chunked) = &targets[i % targets.len()];
        let r = sent(&format!("request {i}: GET {path}"), c.get(path).send())?;
        status_is(&r, 200).map_err(|e| format!("request {i} GET {path}: {e}"))?;
        if r.body() != *expected {
            let at = r
                .body()
                .iter()
                .zip(expected.iter())
                .position(|(a, b)| a != b);
            return Err(format!(
                "request {i} GET {path}: {} B body, expected {} B; first difference at {at:?}",
                r.body().len(),
                expected.len()
            ));
        }
        ensure(is_chunked(&r) == *chunked, || {
            format!(
                "request {i} GET {path}: chunked = {}, expected {chunked}",
                is_chunked(&r)
            )
        })?;
        chunked_seen += u32::from(*chunked);
        bytes += expected.len() as u64;
    }
    let elapsed = started.elapsed();
    let opened = c.connections_opened();
    ensure(opened == 1, || {
        format!("connections_opened() = {opened} after {NGINX_REQUESTS} requests")
    })?;
    Ok(format!(
        "{NGINX_REQUESTS} GETs ({chunked_seen} chunked), {:.0} MiB compared byte for byte, 1 connection, {:.2} s ({:.0} req/s)",
        bytes as f64 / (1 << 20) as f64,
        elapsed.as_secs_f64(),
        NGINX_REQUESTS as f64 / elapsed.as_secs_f64()
    ))
}

fn nginx_gzip(base: &str, files: &[(&str, Vec<u8>)]) -> Outcome {
    let mut c = sent("build", HttpClient::builder(base).gzip(true).build())?;
    let mut compressed = 0;
    for round in 0..5 {
        for (name, data) in files {
            let path = format!("/gzip/{name}");
            let r = sent(&format!("GET {path}"), c.get(&path).send())?;
            status_is(&r, 200)?;
            ensure(r.body() == data.as_slice(), || {
                format!(
                    "round {round} GET {path}: {} B decoded, expected {} B",
                    r.body().len(),
                    data.len()
                )
            })?;
            if !data.is_empty() {
                ensure(r.was_decompressed(), || {
                    format!("GET {path}: not gzip-encoded")
                })?;
                ensure(is_chunked(&r), || format!("GET {path}: not chunked"))?;
                compressed += 1;
            }
        }
    }
    let opened = c.connections_opened();
    ensure(opened == 1, || format!("connections_opened() = {opened}"))?;
    Ok(format!(
        "{compressed} gzip-encoded chunked responses decoded to the files, 1 connection"
    ))
}

fn nginx_head_404(base: &str) -> Outcome {
    let mut c = sent("build", HttpClient::new(base))?;
    let r = sent("HEAD /files/1m.bin", c.head("/files/1m.bin").send())?;
    status_is(&r, 200)?;
    ensure(r.body().is_empty(), || "HEAD returned a body".into())?;
    ensure(r.header("content-length") == Some("1048576"), || {
        format!("Content-Length {:?}", r.header("content-length"))
    })?;
    let r = sent("GET /files/missing.bin", c.get("/files/missing.bin").send())?;
    status_is(&r, 404)?;
    let r = sent("GET /files/1k.bin", c.get("/files/1k.bin").send())?;
    status_is(&r, 200)?;
    ensure(r.body().len() == 1024, || format!("{} B", r.body().len()))?;
    let opened = c.connections_opened();
    ensure(opened == 1, || format!("connections_opened() = {opened}"))?;
    Ok("HEAD of 1 MiB (no body), 404, then a 1 KiB GET on one connection".into())
}
