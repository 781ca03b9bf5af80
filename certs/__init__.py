"""podsizer certificates: CA and serving certificates, reload on rotation."""
