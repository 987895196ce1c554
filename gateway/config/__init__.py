"""What the user asked for: the targets file and environment, parsed into models (pure)."""
