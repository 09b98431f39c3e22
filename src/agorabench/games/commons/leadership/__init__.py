"""Data of the commons leadership variant: SVO populations and wording (TOML files)."""
