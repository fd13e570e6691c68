"""Cross-model aggregation: leaderboards (and, with IRIS, calibration and codes)."""
