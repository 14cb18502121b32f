//! The GPUs `poolc model` knows: each one's dense tensor-core peaks (BF16, and FP8 where
//! the chip has FP8 tensor cores), HBM bandwidth, and the memory PyTorch reports for it
//! (what vLLM multiplies by `gpu_memory_utilization`), with where each figure comes
//! from. The figures are data; nothing here computes with them.
//!
//! Sources: NVIDIA's datasheets (H100 SXM5, H200 SXM, A100 80GB SXM4, L40S, HGX B200;
//! NVIDIA quotes tensor peaks "with sparsity", so the dense figure is half of it) and
//! BLIS's `hardware_config.json` (inference-sim commit f90a1e3a6787, which lists the
//! same H100, A100 and L40S peaks and bandwidths; its L40S `TFlopsFP8` of 1466 is the
//! sparse figure, and the dense 733 is used here). Memory as PyTorch sees it: vLLM's
//! memory-profiling log line `total_gpu_memory (…GiB)`; for the B200, where no such
//! log was at hand, NVML's 183,359 MiB less the 606 MiB an H200 loses between NVML
//! and PyTorch (an estimate, said so in [`Gpu::memory_source`]).

/// One GPU model. Peaks are per GPU, dense (no 2:4 sparsity).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gpu {
    /// The `--gpu` name: lower case, no spaces.
    pub key: &'static str,
    /// Other `--gpu` names accepted for it.
    pub aliases: &'static [&'static str],
    /// The product name.
    pub name: &'static str,
    /// Dense BF16/FP16 tensor-core peak, TFLOP/s.
    pub bf16_tflops: f64,
    /// Dense FP8 tensor-core peak, TFLOP/s; `None` where the chip has no FP8 tensor
    /// cores (A100: vLLM runs FP8 weights there as weight-only, computing in BF16).
    pub fp8_tflops: Option<f64>,
    /// HBM (or GDDR) bandwidth, TB/s.
    pub tb_per_s: f64,
    /// The memory size NVIDIA quotes, GB.
    pub nominal_gb: f64,
    /// The total memory PyTorch reports (`torch.cuda.mem_get_info`), bytes.
    pub torch_total_bytes: u64,
    /// Where the compute and bandwidth figures come from.
    pub peak_source: &'static str,
    /// Where `torch_total_bytes` comes from (a phrase: "as vLLM logs …").
    pub memory_source: &'static str,
}

const MIB: u64 = 1 << 20;

/// Every GPU `--gpu` may name, in the order errors list them.
pub const GPUS: [Gpu; 5] = [
    Gpu {
        key: "h100",
        aliases: &["h100-sxm", "h100-80gb"],
        name: "NVIDIA H100 SXM5 80GB",
        bf16_tflops: 989.5,
        fp8_tflops: Some(1979.0),
        tb_per_s: 3.35,
        nominal_gb: 80.0,
        torch_total_bytes: 85_029_158_912,
        peak_source: "NVIDIA H100 datasheet; BLIS hardware_config.json",
        memory_source: "as vLLM logs total_gpu_memory on an H100 80GB",
    },
    Gpu {
        key: "h200",
        aliases: &["h200-sxm", "h200-141gb"],
        name: "NVIDIA H200 SXM 141GB",
        bf16_tflops: 989.5,
        fp8_tflops: Some(1979.0),
        tb_per_s: 4.8,
        nominal_gb: 141.0,
        torch_total_bytes: 143_165 * MIB,
        peak_source: "NVIDIA H200 datasheet",
        memory_source: "as vLLM logs total_gpu_memory on an H200",
    },
    Gpu {
        key: "a100-80gb",
        aliases: &["a100", "a100-80", "a100-sxm"],
        name: "NVIDIA A100 SXM4 80GB",
        bf16_tflops: 312.0,
        fp8_tflops: None,
        tb_per_s: 2.039,
        nominal_gb: 80.0,
        torch_total_bytes: 81_050 * MIB,
        peak_source: "NVIDIA A100 datasheet; BLIS hardware_config.json",
        memory_source: "as vLLM logs total_gpu_memory on an A100 80GB",
    },
    Gpu {
        key: "l40s",
        aliases: &[],
        name: "NVIDIA L40S 48GB",
        bf16_tflops: 362.05,
        fp8_tflops: Some(733.0),
        tb_per_s: 0.864,
        nominal_gb: 48.0,
        torch_total_bytes: 45_373 * MIB,
        peak_source: "NVIDIA L40S datasheet; BLIS hardware_config.json (BF16, bandwidth)",
        memory_source: "as vLLM logs total_gpu_memory on an L40S",
    },
    Gpu {
        key: "b200",
        aliases: &["b200-sxm"],
        name: "NVIDIA B200 180GB (HGX)",
        bf16_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        tb_per_s: 8.0,
        nominal_gb: 180.0,
        torch_total_bytes: 182_753 * MIB,
        peak_source: "NVIDIA HGX B200 datasheet (1,000 W)",
        memory_source: "estimated: NVML's 183,359 MiB less the 606 MiB an H200 loses to PyTorch",
    },
];

/// The GPU `--gpu NAME` names (its key or an alias, any case).
pub fn find(name: &str) -> Option<&'static Gpu> {
    let name = name.trim().to_ascii_lowercase();
    GPUS.iter()
        .find(|g| g.key == name || g.aliases.iter().any(|a| *a == name))
}

/// The `--gpu` keys, in table order.
pub fn keys() -> Vec<&'static str> {
    GPUS.iter().map(|g| g.key).collect()
}
