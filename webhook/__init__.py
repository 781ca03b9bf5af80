"""podsizer admission webhook: AdmissionReview in, JSON Patch out."""
