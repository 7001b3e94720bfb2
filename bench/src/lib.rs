//! Shared helpers of the benchmarks: medians, ratios and the table they print.
