"""The shared core every podsizer process imports: each rule (identity, codec, modes, bounds, pod plan) once."""
