// rsbuild (Rust): a response body built by appending to a String. Each
// request renders 8-2048 records (log-uniform) as JSON-ish lines
// (`{"id":N,"name":"...","score":N},` with write! and push_str) into a
// String that starts empty: Rust's RawVec grows it to twice its capacity
// (8 bytes first) through __rust_realloc, glibc's realloc, so a request
// of ~40 B a record reallocates 6-14 times, from 8 B up to 128 KiB; the
// body is hashed as a writer would send it, and dropped.
// Unlike strcat.cpp (libstdc++'s std::string: a new block and a copy at
// every growth), a realloc at the top of the heap often grows in place;
// unlike strbuild.c, the growth is the standard library's, not the
// program's.
// Twin (`--cfg twin`): what a Rust engineer writes: a free list of
// Strings (a Vec<String>), each taken, clear()ed (its capacity stays),
// rendered into and pushed back after the write; no vpool.
// The site: String::new() allocates nothing, the body's first block is
// born at fill's first push (never inlined: allocprof skips std's frames,
// String::push, RawVec's growth, __rust_alloc, and names fill's line) and
// grows at its other appends; advise names the birth's line.
// site: rsbuild::fill

use std::fmt::Write as FmtWrite;
use std::hint::black_box;

include!("twbase.rs"); // rand, mix

const NAMES: [&str; 8] = ["alloc", "free", "pool", "victim", "cycle", "heap", "page", "arena"];

/// One request's body: `records` records appended to `out`.
#[inline(never)]
fn fill(out: &mut String, records: u64, rng: &mut u64) {
    out.push('[');
    for i in 0..records {
        let r = rand(rng);
        let name = NAMES[(r % 8) as usize];
        write!(out, "{{\"id\":{},\"name\":\"{}\",\"score\":{}}},", i, name, (r >> 8) % 100000)
            .expect("write to a String");
        if r & 15 == 0 {
            out.push_str("\n  ");
        }
    }
    out.push(']');
}

#[cfg(not(twin))]
#[inline(never)]
fn render(records: u64, rng: &mut u64) -> String {
    let mut out = String::new();
    fill(&mut out, records, rng);
    out
}

#[cfg(twin)]
#[inline(never)]
fn render(records: u64, rng: &mut u64, pool: &mut Vec<String>) -> String {
    let mut out = pool.pop().unwrap_or_default();
    out.clear();
    fill(&mut out, records, rng);
    out
}

/// What the writer does with the body: a digest of its bytes.
#[inline(never)]
fn send(body: &str) -> u64 {
    let b = body.as_bytes();
    let mut h: u64 = b.len() as u64;
    let mut i = 0;
    while i + 8 <= b.len() {
        h = mix(h, u64::from_le_bytes(b[i..i + 8].try_into().unwrap()));
        i += 8;
    }
    h
}

fn main() {
    let n: u64 = std::env::args().nth(1).map(|a| a.parse().expect("a number of requests")).unwrap_or(40000);
    let mut rng: u64 = 0x0123456789abcdef;
    #[cfg(twin)]
    let mut pool: Vec<String> = Vec::new();
    let mut sum: u64 = 0;
    let mut bytes: u64 = 0;
    for _ in 0..n {
        // 8 * 2^(0..8): log-uniform 8-2048 records
        let e = rand(&mut rng) % 8192;
        let records = (8.0 * ((e as f64) / 1024.0).exp2()) as u64;
        #[cfg(not(twin))]
        let body = render(records, &mut rng);
        #[cfg(twin)]
        let body = render(records, &mut rng, &mut pool);
        sum = mix(sum, send(black_box(&body)));
        bytes += body.len() as u64;
        #[cfg(twin)]
        pool.push(body);
    }
    println!("rsbuild {} requests {} bytes checksum {:016x}", n, bytes, sum);
}
