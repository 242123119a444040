// twbase.rs: what the Rust programs of bench/twins share, as twbase.h is
// the C ones' (each takes it by `include!("twbase.rs");`, rustc resolving
// the path beside the program's source): the same random sequence and
// checksum mix, plain and twin.

/// xorshift64* (twbase.h's tw_rand), the same sequence plain and twin.
#[allow(dead_code)]
fn rand(s: &mut u64) -> u64 {
    let mut x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    x.wrapping_mul(0x2545f4914f6cdd1d)
}

/// twbase.h's tw_mix.
#[allow(dead_code)]
fn mix(h: u64, v: u64) -> u64 {
    h ^ (v
        .wrapping_add(0x9e3779b97f4a7c15)
        .wrapping_add(h << 6)
        .wrapping_add(h >> 2))
}
