// Allocations from a Rust program's own functions, through Rust's
// allocation layers (format!, Vec growth, HashMap's hashbrown table,
// Vec::with_capacity): the call site of each is the user's line, marked
// SITE:, named crate::module::function (issue 26). tests/symbolize/rust.py
// builds it with Debian's rustc, legacy and v0 mangling.
use std::collections::HashMap;

mod store {
    pub struct Registry {
        pub items: Vec<String>,
        pub index: std::collections::HashMap<u64, usize>,
    }

    impl Registry {
        #[inline(never)]
        pub fn add(&mut self, i: u64) {
            let name = format!("item-{}", i); // SITE:format
            self.items.push(name); // SITE:push
            self.index.insert(i, self.items.len()); // SITE:insert
        }
    }

    #[inline(never)]
    pub fn make_buffer(n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n); // SITE:with_capacity
        v.resize(n, 7u8);
        v
    }
}

fn main() {
    let mut r = store::Registry { items: Vec::new(), index: HashMap::new() };
    for i in 0..1000u64 {
        r.add(i);
    }
    let mut total = 0usize;
    for i in 0..100 {
        let b = store::make_buffer(1000 + i);
        total += b.len();
    }
    println!("{} {} {}", r.items.len(), r.index.len(), total);
}
