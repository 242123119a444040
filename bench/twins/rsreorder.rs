// rsreorder (Rust): a stream reassembler. Messages of 16-192 KiB
// (log-uniform) arrive out of order within a window of 8 (each is at
// most 7 places from where it belongs); each is received into a buffer
// of its own (`vec![0u8; len]`, zeroed: calloc through
// __rust_alloc_zeroed, then every byte written by the "read"), parked in
// a slot of the window until every earlier message has arrived, then
// delivered in order (every byte checksummed) and dropped. So up to 8
// buffers live at a time, freed in an order other than their births.
// Unlike rsframes.rs (one 2-24 KiB Vec a request, dropped at once) and
// rsbuild.rs (a String grown by realloc), the blocks are big and live
// across requests: glibc maps the first ones (above its 128 KiB mmap
// threshold), and once their frees raise the threshold serves them from
// the heap, where a freed buffer coalesces with its free neighbours and,
// at the top of the heap, may take it past the trim threshold.
// Twin (`--cfg twin`): what a Rust engineer writes: a free list of
// buffers (a Vec<Vec<u8>>): a delivered buffer is pushed on it, receive
// pops one, clear()s it and resize()s it to the length (zeroing, as
// vec! did; a smaller one grows); no vpool.
// site: rsreorder::receive

use std::hint::black_box;

include!("twbase.rs"); // rand, mix

const WINDOW: usize = 8;

/// The "network read": every byte of the message, from its sequence number.
fn read_into(buf: &mut [u8], seq: u64) {
    let mut s = seq.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    for chunk in buf.chunks_mut(8) {
        let v = rand(&mut s).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

fn len_of(seq: u64) -> usize {
    // 16 KiB * 2^(0..3.58): log-uniform 16-192 KiB, a function of seq
    let mut s = seq ^ 0x5555_aaaa_1234_5678;
    let e = rand(&mut s) % 3585;
    (16384.0 * ((e as f64) / 1000.0).exp2()) as usize
}

#[cfg(not(twin))]
#[inline(never)]
fn receive(seq: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len_of(seq)];
    read_into(&mut buf, seq);
    buf
}

#[cfg(twin)]
#[inline(never)]
fn receive(seq: u64, pool: &mut Vec<Vec<u8>>) -> Vec<u8> {
    let mut buf = pool.pop().unwrap_or_default();
    buf.clear();
    buf.resize(len_of(seq), 0);
    read_into(&mut buf, seq);
    buf
}

#[inline(never)]
fn deliver(buf: &[u8]) -> u64 {
    let mut h = buf.len() as u64;
    for c in buf.chunks_exact(8) {
        h = mix(h, u64::from_le_bytes(c.try_into().unwrap()));
    }
    h
}

fn main() {
    let n: u64 = std::env::args().nth(1).map(|a| a.parse().expect("a number of messages")).unwrap_or(12000);
    let mut rng: u64 = 0x0123_4567_89ab_cdef;
    // The arrival order: 0..n shuffled within blocks of WINDOW.
    let mut order: Vec<u64> = (0..n).collect();
    for blk in order.chunks_mut(WINDOW) {
        for i in (1..blk.len()).rev() {
            let j = (rand(&mut rng) % (i as u64 + 1)) as usize;
            blk.swap(i, j);
        }
    }
    #[cfg(twin)]
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut slots: Vec<Option<Vec<u8>>> = (0..2 * WINDOW).map(|_| None).collect();
    let mut next: u64 = 0;
    let mut sum: u64 = 0;
    let mut bytes: u64 = 0;
    for &seq in &order {
        #[cfg(not(twin))]
        let buf = receive(seq);
        #[cfg(twin)]
        let buf = receive(seq, &mut pool);
        slots[(seq as usize) % (2 * WINDOW)] = Some(buf);
        while let Some(b) = slots[(next as usize) % (2 * WINDOW)].take() {
            sum = mix(sum, deliver(black_box(&b)));
            bytes += b.len() as u64;
            next += 1;
            #[cfg(twin)]
            pool.push(b);
            #[cfg(not(twin))]
            drop(b);
        }
    }
    println!("rsreorder {} messages {} bytes checksum {:016x}", n, bytes, sum);
}
