//! libFuzzer's driver of target (b) the JIT equals the interpreter on whole generated specs: hands each input to
//! `poolc_fuzz::jit_interp::run`, which holds the properties; nothing else here.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = poolc_fuzz::jit_interp::run(data);
});
