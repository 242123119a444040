// advise's rule for Rust sites (tests/advise/advise-e2e.py, rustlist):
// per line of a made-up text a Vec<String> of its words, hashed and
// dropped, as a Rust program splits lines. The Strings and the Vec are
// blocks of one line (SITE), whose objects stay in their thread: advise
// measures a free list of each thread's own there first and judges the
// site on it (a Rust program's pool is its own: a Vec of spares), with
// vpool beside it. Usage: advise_rust [LINES].
use std::hash::{Hash, Hasher};

#[inline(never)]
fn split_words(line: &str) -> Vec<String> {
    let mut v = Vec::new();
    for w in line.split(' ') {
        v.push(w.to_string()); // SITE: advise_rust
    }
    v
}

fn main() {
    let lines: usize = std::env::args().nth(1).map(|a| a.parse().unwrap()).unwrap_or(20000);
    let mut text = String::new();
    let mut x: u64 = 88172645463325252;
    let mut sum: u64 = 0;
    for _ in 0..lines {
        text.clear();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = 8 + (x % 24) as usize;
        for k in 0..n {
            if k > 0 {
                text.push(' ');
            }
            for c in 0..(2 + (x >> (k % 32)) % 12) {
                text.push((b'a' + ((x >> c) % 26) as u8) as char);
            }
        }
        let words = split_words(&text);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for w in &words {
            w.hash(&mut h);
        }
        sum = sum.wrapping_add(h.finish());
    }
    println!("advise_rust: {} lines, checksum {}", lines, sum);
}
