// rswords (Rust): a text indexer's word splitter. Each line of a
// synthetic text (20-200 words, uniform, drawn with a skew from a
// vocabulary of 4,096 words of 2-14 letters, separated by one or two
// spaces) is generated into a reused line buffer and split by
// split_words into a Vec<String>: one String a word (`to_string()`, a
// block of the word's length), the Vec grown by RawVec as it is pushed
// (4 elements of 24 bytes, then 8, 16, ... 256 by __rust_realloc). The
// caller hashes the words (a digest, a count of words by length, the
// longest word's hash) and drops the Vec: every String and the Vec's
// buffer freed; per line ~110 Strings, the Vec's block and 5.2 reallocs.
// Unlike rsbuild.rs and rsrecfmt.rs (one String a request) and
// toksplit.cpp (C++, 9 fields a line), a line here is a hundred small
// Strings owned by one Vec.
// Twin (`--cfg twin`): what a Rust engineer writes once the profile
// shows it: one Vec<String> kept across lines, with a count of the words
// in use; a word is clear()ed and push_str()ed into the String already
// at its index (its capacity kept; grown when too small), a new String
// pushed only when the line has more words than any before. No vpool.
// The site: a word's String and the Vec's blocks are born at one line of
// split_words (`v.push(w.to_string())`; allocprof skips std's frames,
// RawVec's growth and __rust_alloc): one site, both kinds of block.
// site: rswords::split_words

use std::hint::black_box;

include!("twbase.rs"); // rand, mix

/// The words of a line, each a String of its own.
#[cfg(not(twin))]
#[inline(never)]
fn split_words(line: &str) -> Vec<String> {
    let mut v = Vec::new();
    for w in line.split(' ') {
        if !w.is_empty() {
            v.push(w.to_string());
        }
    }
    v
}

/// The words of a line into the kept Vec's Strings; returns how many.
#[cfg(twin)]
#[inline(never)]
fn split_words(line: &str, v: &mut Vec<String>) -> usize {
    let mut n = 0;
    for w in line.split(' ') {
        if w.is_empty() {
            continue;
        }
        if n < v.len() {
            let s = &mut v[n];
            s.clear();
            s.push_str(w);
        } else {
            v.push(w.to_string());
        }
        n += 1;
    }
    n
}

/// A line of the text: 20-200 words, one or two spaces between them.
#[inline(never)]
fn gen_line(rng: &mut u64, vocab: &[String], line: &mut String) {
    line.clear();
    let words = 20 + rand(rng) % 181;
    for _ in 0..words {
        let r = rand(rng);
        // skewed: the smaller of two draws
        let a = (r % 4096) as usize;
        let b = ((r >> 20) % 4096) as usize;
        line.push_str(&vocab[a.min(b)]);
        line.push(' ');
        if r >> 60 == 0 {
            line.push(' ');
        }
    }
}

/// What the indexer does with a line's words.
#[inline(never)]
fn hash_words(words: &[String], by_len: &mut [u64; 16]) -> u64 {
    let mut h: u64 = words.len() as u64;
    let mut longest = 0usize;
    let mut lh = 0u64;
    for w in words {
        let mut wh: u64 = 0xcbf29ce484222325;
        for &c in w.as_bytes() {
            wh = (wh ^ c as u64).wrapping_mul(0x100000001b3);
        }
        by_len[w.len() & 15] += 1;
        if w.len() > longest {
            longest = w.len();
            lh = wh;
        }
        h = mix(h, wh);
    }
    mix(h, lh)
}

fn main() {
    let n: u64 = std::env::args().nth(1).map(|a| a.parse().expect("a number of lines")).unwrap_or(100000);
    let mut rng: u64 = 0xa54ff53a5f1d36f1;
    let mut vocab = Vec::with_capacity(4096);
    for _ in 0..4096 {
        let r = rand(&mut rng);
        let len = 2 + (r % 13) as usize;
        let w: String = (0..len).map(|k| (b'a' + ((r >> (8 + 3 * k)) % 26) as u8) as char).collect();
        vocab.push(w);
    }
    let mut line = String::with_capacity(4096);
    let mut by_len = [0u64; 16];
    let mut sum: u64 = 0;
    let mut words: u64 = 0;
    #[cfg(twin)]
    let mut kept: Vec<String> = Vec::new();
    for _ in 0..n {
        gen_line(&mut rng, &vocab, &mut line);
        #[cfg(not(twin))]
        {
            let v = split_words(black_box(&line));
            words += v.len() as u64;
            sum = mix(sum, hash_words(&v, &mut by_len));
        }
        #[cfg(twin)]
        {
            let k = split_words(black_box(&line), &mut kept);
            words += k as u64;
            sum = mix(sum, hash_words(&kept[..k], &mut by_len));
        }
    }
    for c in by_len {
        sum = mix(sum, c);
    }
    println!("rswords {} lines {} words checksum {:016x}", n, words, sum);
}
