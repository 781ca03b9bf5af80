"""The shared core every podsizer process imports: identity, codec, modes, bounds and the pod plan, once."""
