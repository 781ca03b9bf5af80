"""Sizing logic: usage model in, Recommendations out (static, autopilot, GPU, waste, cost, forecast)."""
