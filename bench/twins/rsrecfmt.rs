// rsrecfmt (Rust): a ledger export writing one tab-separated line per
// entry. Each entry (an id, an account name, an amount in cents, a memo of
// 0-1,400 characters, log-uniform above 8, with a tab in about one
// character of 40) is formatted by format_record into a String made with
// String::with_capacity(64 + memo length), the size the writer expects:
// write! of the id, account and amount, then the memo with its tabs and
// backslashes escaped (which can overrun the estimate: RawVec then grows
// the String by __rust_realloc, doubling), then a newline. The line is
// appended to a 64 KiB output buffer (kept, flushed into a digest when
// full) and dropped. One malloc and free a line, a realloc in one line
// of ~30.
// Twin (`--cfg twin`): what a Rust engineer writes once the profile
// shows it: a free list of Strings (a Vec<String>), each taken,
// clear()ed and reserve()d to the same estimate (its capacity stays),
// formatted into and pushed back after the write; no vpool.
// site: rsrecfmt::format_record

use std::fmt::Write as FmtWrite;
use std::hint::black_box;

include!("twbase.rs"); // rand, mix

const ACCOUNTS: [&str; 6] = [
    "assets:bank:checking",
    "expenses:food",
    "income:salary",
    "liabilities:credit-card:visa",
    "expenses:travel:rail",
    "equity:opening-balances",
];

struct Entry<'a> {
    id: u64,
    account: &'a str,
    cents: i64,
    memo: &'a str,
}

fn escape_into(out: &mut String, memo: &str) {
    for c in memo.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
}

#[cfg(not(twin))]
#[inline(never)]
fn format_record(e: &Entry) -> String {
    let mut s = String::with_capacity(64 + e.memo.len());
    write!(s, "{}\t{}\t{}.{:02}\t", e.id, e.account, e.cents / 100, (e.cents % 100).abs()).expect("write to a String");
    escape_into(&mut s, e.memo);
    s.push('\n');
    s
}

#[cfg(twin)]
#[inline(never)]
fn format_record(e: &Entry, pool: &mut Vec<String>) -> String {
    let mut s = pool.pop().unwrap_or_default();
    s.clear();
    s.reserve(64 + e.memo.len());
    write!(s, "{}\t{}\t{}.{:02}\t", e.id, e.account, e.cents / 100, (e.cents % 100).abs()).expect("write to a String");
    escape_into(&mut s, e.memo);
    s.push('\n');
    s
}

/// The writer: lines into a 64 KiB buffer, digested when it fills.
struct Out {
    buf: Vec<u8>,
    digest: u64,
    bytes: u64,
}

impl Out {
    #[inline(never)]
    fn write(&mut self, line: &str) {
        if self.buf.len() + line.len() > self.buf.capacity() {
            self.flush();
        }
        self.buf.extend_from_slice(line.as_bytes());
        self.bytes += line.len() as u64;
    }
    fn flush(&mut self) {
        let b = &self.buf;
        let mut h = self.digest;
        let mut i = 0;
        while i + 8 <= b.len() {
            h = mix(h, u64::from_le_bytes(b[i..i + 8].try_into().unwrap()));
            i += 8;
        }
        self.digest = mix(h, b.len() as u64);
        self.buf.clear();
    }
}

fn main() {
    let n: u64 = std::env::args().nth(1).map(|a| a.parse().expect("a number of entries")).unwrap_or(1000000);
    let mut rng: u64 = 0x1ed6e2f0ba1a7ce5;
    // the memo texts: a 4 KiB pool of words, tabs and backslashes
    let mut text = String::with_capacity(4096 + 1500);
    let words = ["rent", "groceries", "refund", "invoice", "#4471", "Zürich", "split", "fare", "tip"];
    while text.len() < 4096 + 1450 {
        let r = rand(&mut rng);
        text.push_str(words[(r % 9) as usize]);
        text.push(match r >> 60 {
            0 => '\t',
            1 => '\\',
            _ => ' ',
        });
    }
    let mut out = Out { buf: Vec::with_capacity(64 << 10), digest: 0, bytes: 0 };
    #[cfg(twin)]
    let mut pool: Vec<String> = Vec::new();
    for id in 0..n {
        let r = rand(&mut rng);
        let len = if r & 7 == 0 { (r >> 3) % 8 } else { (8.0 * (((r >> 3) % 7627) as f64 / 1024.0).exp2()) as u64 };
        let mut start = ((r >> 20) % 4096) as usize;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let mut end = start + len as usize;
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let e = Entry {
            id: 100000 + id,
            account: ACCOUNTS[((r >> 40) % 6) as usize],
            cents: ((r >> 44) % 2000000) as i64 - 1000000,
            memo: &text[start..end],
        };
        #[cfg(not(twin))]
        let line = format_record(black_box(&e));
        #[cfg(twin)]
        let line = format_record(black_box(&e), &mut pool);
        out.write(&line);
        #[cfg(twin)]
        pool.push(line);
    }
    out.flush();
    println!("rsrecfmt {} entries {} bytes checksum {:016x}", n, out.bytes, out.digest);
}
