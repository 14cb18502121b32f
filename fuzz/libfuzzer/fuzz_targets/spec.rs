//! libFuzzer's driver of target (a) source → check → IR → JIT: hands each input to
//! `poolc_fuzz::spec::run`, which holds the properties; nothing else here.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = poolc_fuzz::spec::run(data);
});
