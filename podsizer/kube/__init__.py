"""Kubernetes plumbing every role shares: the client factory, custom objects, list+watch, API times and
Event bodies."""
