// rsframes (Rust): a per-request message decoder. Each request receives
// a frame in the connection's input buffer (one long-lived Vec<u8>,
// reused): a header line `topic=...;key=...;ctype=...;len=N` and a payload
// of N = 2-24 KiB (log-uniform) bytes, masked as on a websocket. The
// decoder parses the three header fields into small Strings (8-40 B, from
// tcache), unmasks the payload into a Vec<u8> of its own (every byte
// written), checksums it as a handler would, and drops everything at the
// end of the request.
// A pool should help a little, if at all: glibc serves 2-24 KiB from its
// bins and the top of the heap, which stays far below the trim threshold
// (no page faults); a pool saves one malloc/free pair a request, beside
// the ~9 KiB unmasked and summed.
// Twin (`--cfg twin`): what a Rust engineer writes: a free list of payload
// buffers (a Vec<Vec<u8>>), each taken, clear()ed (its capacity stays),
// filled by the same unmasking and pushed back after the handler; no
// vpool. The Strings are not pooled.
// The site is decode_payload (never inlined): plain, one Vec::with_capacity
// a request there (rustc's RawVec, __rust_alloc, malloc).
// site: rsframes::decode_payload

use std::hint::black_box;
use std::io::Write;

include!("twbase.rs"); // rand, mix

const TOPICS: [&str; 6] = [
    "orders",
    "orders.eu-west-1",
    "quotes.equities.level2",
    "trades",
    "audit.session.events.v2",
    "heartbeat",
];
const CTYPES: [&str; 4] = [
    "application/octet-stream",
    "application/x-protobuf",
    "application/vnd.frames+json",
    "text/plain",
];

/// The next frame into `frame` (reused): the header line, then the
/// payload masked with `mask`. Returns the payload's length.
fn make_frame(frame: &mut Vec<u8>, rng: &mut u64) -> usize {
    let e = rand(rng) % 4096;
    // 2 KiB * 12^(e/4096): log-uniform 2-24 KiB
    let len = (2048.0 * 12f64.powf(e as f64 / 4096.0)) as usize;
    let topic = TOPICS[(rand(rng) % TOPICS.len() as u64) as usize];
    let ctype = CTYPES[(rand(rng) % CTYPES.len() as u64) as usize];
    let key = rand(rng);
    frame.clear();
    frame.extend_from_slice(b"topic=");
    frame.extend_from_slice(topic.as_bytes());
    frame.extend_from_slice(b";key=");
    let klen = 8 + (key % 17) as usize;
    for i in 0..klen {
        frame.push(b"0123456789abcdef"[((key >> (i % 16 * 4)) & 15) as usize]);
    }
    frame.extend_from_slice(b";ctype=");
    frame.extend_from_slice(ctype.as_bytes());
    write!(frame, ";len={}\n", len).unwrap(); // into the Vec: no allocation
    let start = frame.len();
    frame.resize(start + len, 0);
    let mut seed = rand(rng);
    let mut chunks = frame[start..].chunks_exact_mut(8);
    for c in &mut chunks {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        c.copy_from_slice(&(seed >> 8).to_le_bytes());
    }
    for b in chunks.into_remainder() {
        *b = seed as u8;
    }
    len
}

/// A decoded frame's header: three owned Strings, as a decoder returns them.
struct Header {
    topic: String,
    key: String,
    ctype: String,
    len: usize,
}

fn parse_header(line: &[u8]) -> Header {
    let mut h = Header {
        topic: String::new(),
        key: String::new(),
        ctype: String::new(),
        len: 0,
    };
    for field in line.split(|&b| b == b';') {
        let eq = field.iter().position(|&b| b == b'=').expect("field without '='");
        let (name, value) = (&field[..eq], &field[eq + 1..]);
        let value = std::str::from_utf8(value).expect("header not UTF-8");
        match name {
            b"topic" => h.topic = value.to_owned(),
            b"key" => h.key = value.to_owned(),
            b"ctype" => h.ctype = value.to_owned(),
            b"len" => h.len = value.parse().expect("bad len"),
            _ => panic!("unknown field"),
        }
    }
    h
}

/// The payload's mask: four bytes from the key, as a websocket's.
fn mask_of(key: &str) -> [u8; 4] {
    let k = key.as_bytes();
    [k[0], k[1] ^ 0x5a, k[2], k[3] ^ 0xa5]
}

/// Appends `masked` unmasked to `out`, eight bytes at a time (the mask
/// repeats every four; `out` has room for all of it).
#[inline(always)]
fn unmask(masked: &[u8], mask: [u8; 4], out: &mut Vec<u8>) {
    let m = u32::from_le_bytes(mask) as u64;
    let m = m | m << 32;
    let mut words = masked.chunks_exact(8);
    for c in &mut words {
        let w = u64::from_le_bytes(c.try_into().unwrap()) ^ m;
        out.extend_from_slice(&w.to_le_bytes());
    }
    for (i, &b) in words.remainder().iter().enumerate() {
        out.push(b ^ mask[i & 3]);
    }
}

/// Unmasks `masked` into a new payload buffer (plain: one allocation of
/// masked.len() bytes a request).
#[cfg(not(twin))]
#[inline(never)]
fn decode_payload(masked: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::with_capacity(masked.len());
    unmask(masked, mask, &mut out);
    out
}

/// The twin: a payload buffer from the free list (cleared, its capacity
/// kept; a new one when the list is empty), filled the same way.
#[cfg(twin)]
#[inline(never)]
fn decode_payload(masked: &[u8], mask: [u8; 4], pool: &mut Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = pool.pop().unwrap_or_default();
    out.clear();
    out.reserve(masked.len());
    unmask(masked, mask, &mut out);
    out
}

/// What the handler does with a request: a digest of the payload and
/// the header.
fn handle(h: &Header, payload: &[u8]) -> u64 {
    let mut acc = [0u64; 4];
    let mut words = payload.chunks_exact(32);
    for c in &mut words {
        for j in 0..4 {
            let w = u64::from_le_bytes(c[j * 8..j * 8 + 8].try_into().unwrap());
            acc[j] = acc[j].wrapping_add(w ^ (w >> 29));
        }
    }
    let mut d = acc[0] ^ acc[1].rotate_left(17) ^ acc[2].rotate_left(31) ^ acc[3].rotate_left(47);
    for &b in words.remainder() {
        d = mix(d, b as u64);
    }
    for s in [&h.topic, &h.key, &h.ctype] {
        d = mix(d, s.len() as u64);
        d = mix(d, s.as_bytes()[s.len() - 1] as u64);
    }
    mix(d, payload.len() as u64)
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("requests: a number"))
        .unwrap_or(250_000);
    let mut rng: u64 = 0x5eed_f00d_1234_abcd;
    let mut frame: Vec<u8> = Vec::with_capacity(32 << 10);
    #[cfg(twin)]
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut sum: u64 = 0;
    let mut bytes: u64 = 0;
    for _ in 0..n {
        let len = make_frame(&mut frame, &mut rng);
        let nl = frame.iter().position(|&b| b == b'\n').expect("no header line");
        let h = parse_header(&frame[..nl]);
        assert_eq!(h.len, len);
        let masked = &frame[nl + 1..];
        #[cfg(not(twin))]
        let payload = decode_payload(masked, mask_of(&h.key));
        #[cfg(twin)]
        let payload = decode_payload(masked, mask_of(&h.key), &mut pool);
        sum = mix(sum, handle(&h, black_box(&payload)));
        bytes += payload.len() as u64;
        #[cfg(twin)]
        pool.push(payload);
        // plain: payload and the header's Strings dropped here
    }
    println!("rsframes {} requests {} payload bytes checksum {:016x}", n, bytes, sum);
}
